/* scaler_model.h: a modelled CPU load per category (--modelled-load FILE), for benchmarks that
 * run more nominal cores than the machine has: each task of a listed category counts as using
 * FRACTION of its cores, in place of the resource monitor's measurement, in the CPU load the
 * hpa policy reads. The file has one "CATEGORY FRACTION" a line; # starts a comment. */
#ifndef HTC_SCALER_MODEL_H
#define HTC_SCALER_MODEL_H

#include <stddef.h>

#include "scaler.h"

struct scaler_model;

/* Reads PATH. NULL with ERR naming the file and line on a bad line or an unreadable file. */
struct scaler_model *scaler_model_load(const char *path, char *err, size_t errlen);
void scaler_model_delete(struct scaler_model *m); /* NULL is ok */
/* Sets cores_avg of every category of IN that M lists: FRACTION x its cores (1 if unknown). */
void scaler_model_apply(const struct scaler_model *m, struct scaler_input *in);

#endif
