# resource_monitor/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).

PROGS += resource_monitor
resource_monitor_COMPONENT := resource_monitor
