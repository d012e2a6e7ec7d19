/* svg_writer.h: a small writer of SVG (and the HTML around it) into a capped buffer, for the
 * run report's plots. It escapes every text it is given, formats numbers compactly, and counts
 * the elements it wrote so that callers can switch to aggregated plots above a budget. */
#ifndef MAKEFLOW_SVG_WRITER_H
#define MAKEFLOW_SVG_WRITER_H

#include <stddef.h>

#include "buffer.h"

struct svg {
	struct buffer *out; /* not owned */
	long elements;      /* elements written since svg_begin */
};

/* Appends S to B with &, <, >, " and ' escaped for HTML text and attribute values. Returns 0 or
 * HTC_ETOOBIG (buffer.h). */
int svg_escape(struct buffer *b, const char *s);

/* Opens an <svg> of W x H user units (scaled to the page width) with a CSS CLASS (may be NULL)
 * and an accessible LABEL (escaped). */
int svg_begin(struct svg *s, struct buffer *out, double w, double h, const char *cls,
              const char *label);
int svg_end(struct svg *s);

/* A rectangle filled with FILL (a CSS colour; NULL: from the stylesheet by CLS), with OPACITY
 * (1: opaque), a CSS class CLS (may be NULL) and a tooltip TITLE (escaped; NULL: none). */
int svg_rect(struct svg *s, double x, double y, double w, double h, const char *fill,
             double opacity, const char *cls, const char *title);
/* A line of STROKE colour and WIDTH. */
int svg_line(struct svg *s, double x1, double y1, double x2, double y2, const char *stroke,
             double width);
/* Text (escaped) at X, Y; ANCHOR is "start", "middle" or "end"; SIZE in user units. */
int svg_text(struct svg *s, double x, double y, const char *anchor, double size, const char *text);
/* A polyline through N points (XS[i], YS[i]) of STROKE colour, not filled. */
int svg_polyline(struct svg *s, const double *xs, const double *ys, size_t n, const char *stroke,
                 double width);

/* Formats V with at most 2 decimals and no trailing zeros into OUT (at least 32 bytes). */
const char *svg_num(double v, char *out, size_t len);

#endif
