# work_queue/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += catalog_server catalog_query catalog_update
catalog_server_COMPONENT := work_queue
catalog_query_COMPONENT := work_queue
catalog_update_COMPONENT := work_queue
PROGS += work_queue_worker
work_queue_worker_COMPONENT := work_queue
# The agent of a shared container runs inside any image: linked statically, with no library of
# the tree (the Makefile's STATIC_PROGS rule); its client code is one C-library-only source.
STATIC_PROGS += htc_container_agent
htc_container_agent_COMPONENT := work_queue
htc_container_agent_SRCS := work_queue/src/worker/worker_runner_agent.c
PROGS += work_queue_status
work_queue_status_COMPONENT := work_queue

# External libraries: the library's own (its .so and htc-work-queue.pc), and each program's
# whole link (doc/design.md, "Build").
work_queue_LIB_DEPS := libuv libcurl jansson zlib libssl libcrypto m
catalog_server_DEPS := libuv jansson libseccomp
catalog_query_DEPS := libuv jansson
catalog_update_DEPS := libuv jansson
work_queue_worker_DEPS := libuv libcurl libseccomp jansson zlib libssl libcrypto m
work_queue_status_DEPS := libuv jansson libssl libcrypto
