# batch_drivers/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += work_queue_factory
work_queue_factory_COMPONENT := batch_drivers
