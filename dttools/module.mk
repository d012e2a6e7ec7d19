# dttools/module.mk: programs of this component (library sources are found
# automatically; see the top-level Makefile).

# External libraries (pkg-config module names, `m` = libm) that this component's library uses
# itself: its shared object links them, htc-dttools.pc names them for static links.
dttools_LIB_DEPS := libcurl jansson libcrypto
