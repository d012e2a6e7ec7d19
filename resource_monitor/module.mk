# resource_monitor/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).

PROGS += resource_monitor
resource_monitor_COMPONENT := resource_monitor

# External libraries: the library's own (its .so and htc-rmonitor.pc), and each program's
# whole link (doc/design.md, "Build").
resource_monitor_LIB_DEPS := libuv jansson libseccomp m
resource_monitor_DEPS := libuv jansson libseccomp m
