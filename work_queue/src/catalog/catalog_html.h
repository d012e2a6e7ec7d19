/* catalog_html.h: the catalog server's HTML page (GET /index.html, or GET / from a browser): the
 * projects it knows as one small table, readable without a network or script, refreshed by the
 * browser every 10 seconds. The JSON and text queries of CCTools clients are unchanged. */
#ifndef HTC_CATALOG_HTML_H
#define HTC_CATALOG_HTML_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The page for RECORDS (an array of catalog records) at time NOW_US; *LEN gets its length.
 * Caller frees. Never NULL. */
char *catalog_html_page(const json_t *records, int64_t now_us, const char *version, size_t *len);

#endif
