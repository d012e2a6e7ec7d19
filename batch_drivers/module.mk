# batch_drivers/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += work_queue_factory
work_queue_factory_COMPONENT := batch_drivers
# the image builder of worker pods (doc/kubernetes.md, section 8)
SCRIPTS += htc_worker_image
htc_worker_image_SCRIPT := batch_drivers/src/k8s/htc_worker_image.py

# External libraries: the library's own (its .so and htc-batch.pc), and each program's whole
# link (doc/design.md, "Build").
batch_drivers_LIB_DEPS := libuv libcurl jansson m
work_queue_factory_DEPS := libuv libcurl libseccomp jansson zlib libssl libcrypto m
