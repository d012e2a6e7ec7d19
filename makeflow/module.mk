# makeflow/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += makeflow makeflow_analyze makeflow_viz makeflow_monitor makeflow_report
makeflow_COMPONENT := makeflow
makeflow_analyze_COMPONENT := makeflow
makeflow_viz_COMPONENT := makeflow
makeflow_monitor_COMPONENT := makeflow
makeflow_report_COMPONENT := makeflow

# External libraries: the library's own, and each program's whole link (doc/design.md, "Build").
makeflow_LIB_DEPS := libuv libcurl jansson zlib m
makeflow_DEPS := libuv libcurl libseccomp jansson zlib libssl libcrypto m
makeflow_analyze_DEPS := jansson m
makeflow_viz_DEPS := jansson m
makeflow_monitor_DEPS := libuv zlib
makeflow_report_DEPS := jansson zlib m
