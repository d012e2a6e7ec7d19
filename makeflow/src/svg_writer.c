/* svg_writer.c: the SVG writer of the run report: every element is one buffer_printf, every
 * text goes through svg_escape, and numbers are written short so that a large plot stays
 * small. See svg_writer.h. */
#include "svg_writer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "htc_error.h"

#include "banned.h"

int svg_escape(struct buffer *b, const char *s)
{
	int r = 0;
	const char *run = s;
	for (const char *p = s; *p && r == 0; p++) {
		const char *rep = NULL;
		switch (*p) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&#39;"; break;
		default: continue;
		}
		r = buffer_putlstring(b, run, (size_t)(p - run));
		if (r == 0)
			r = buffer_putstring(b, rep);
		run = p + 1;
	}
	if (r == 0)
		r = buffer_putstring(b, run);
	return r;
}

const char *svg_num(double v, char *out, size_t len)
{
	if (!isfinite(v))
		v = 0;
	snprintf(out, len, "%.2f", v);
	char *dot = strchr(out, '.');
	if (dot) {
		char *end = out + strlen(out) - 1;
		while (end > dot && *end == '0')
			*end-- = 0;
		if (end == dot)
			*end = 0;
	}
	if (strcmp(out, "-0") == 0)
		snprintf(out, len, "0");
	return out;
}

int svg_begin(struct svg *s, struct buffer *out, double w, double h, const char *cls,
              const char *label)
{
	char a[32], b[32];
	s->out = out;
	s->elements = 0;
	int r = buffer_printf(out,
	                      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %s %s\" "
	                      "width=\"100%%\" class=\"%s\" role=\"img\" aria-label=\"",
	                      svg_num(w, a, sizeof a), svg_num(h, b, sizeof b), cls ? cls : "plot");
	if (r == 0)
		r = svg_escape(out, label ? label : "");
	if (r == 0)
		r = buffer_putstring(out, "\">\n");
	return r;
}

int svg_end(struct svg *s)
{
	return buffer_putstring(s->out, "</svg>\n");
}

int svg_rect(struct svg *s, double x, double y, double w, double h, const char *fill,
             double opacity, const char *cls, const char *title)
{
	char nx[32], ny[32], nw[32], nh[32], no[32];
	struct buffer *b = s->out;
	int r = buffer_printf(b, "<rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"",
	                      svg_num(x, nx, sizeof nx), svg_num(y, ny, sizeof ny),
	                      svg_num(w < 0 ? 0 : w, nw, sizeof nw), svg_num(h, nh, sizeof nh));
	if (r == 0 && fill)
		r = buffer_printf(b, " fill=\"%s\"", fill);
	if (r == 0 && opacity < 1)
		r = buffer_printf(b, " fill-opacity=\"%s\"", svg_num(opacity, no, sizeof no));
	if (r == 0 && cls)
		r = buffer_printf(b, " class=\"%s\"", cls);
	if (r == 0 && title) {
		r = buffer_putstring(b, "><title>");
		if (r == 0)
			r = svg_escape(b, title);
		if (r == 0)
			r = buffer_putstring(b, "</title></rect>\n");
	} else if (r == 0) {
		r = buffer_putstring(b, "/>\n");
	}
	s->elements++;
	return r;
}

int svg_line(struct svg *s, double x1, double y1, double x2, double y2, const char *stroke,
             double width)
{
	char a[32], b[32], c[32], d[32], w[32];
	s->elements++;
	return buffer_printf(s->out,
	                     "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" stroke=\"%s\" "
	                     "stroke-width=\"%s\"/>\n",
	                     svg_num(x1, a, sizeof a), svg_num(y1, b, sizeof b),
	                     svg_num(x2, c, sizeof c), svg_num(y2, d, sizeof d), stroke,
	                     svg_num(width, w, sizeof w));
}

int svg_text(struct svg *s, double x, double y, const char *anchor, double size, const char *text)
{
	char a[32], b[32], c[32];
	s->elements++;
	int r = buffer_printf(
	    s->out, "<text x=\"%s\" y=\"%s\" text-anchor=\"%s\" font-size=\"%s\">",
	    svg_num(x, a, sizeof a), svg_num(y, b, sizeof b), anchor, svg_num(size, c, sizeof c));
	if (r == 0)
		r = svg_escape(s->out, text);
	if (r == 0)
		r = buffer_putstring(s->out, "</text>\n");
	return r;
}

int svg_polyline(struct svg *s, const double *xs, const double *ys, size_t n, const char *stroke,
                 double width)
{
	char a[32], b[32];
	s->elements++;
	int r = buffer_putstring(s->out, "<polyline points=\"");
	for (size_t i = 0; i < n && r == 0; i++)
		r = buffer_printf(s->out, "%s%s,%s", i ? " " : "", svg_num(xs[i], a, sizeof a),
		                  svg_num(ys[i], b, sizeof b));
	if (r == 0)
		r = buffer_printf(s->out, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"/>\n",
		                  stroke, svg_num(width, a, sizeof a));
	return r;
}
