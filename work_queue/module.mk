# work_queue/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
