# makeflow/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).
PROGS += makeflow makeflow_analyze makeflow_viz
makeflow_COMPONENT := makeflow
makeflow_analyze_COMPONENT := makeflow
makeflow_viz_COMPONENT := makeflow
