# work_queue/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += catalog_server catalog_query catalog_update
catalog_server_COMPONENT := work_queue
catalog_query_COMPONENT := work_queue
catalog_update_COMPONENT := work_queue
PROGS += work_queue_worker
work_queue_worker_COMPONENT := work_queue
PROGS += work_queue_status
work_queue_status_COMPONENT := work_queue
