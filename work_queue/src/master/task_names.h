/* task_names.h: the names a task's inputs and outputs were given, indexed so that each new name
 * is checked against all the others (rule 4 of doc/work-queue-protocol.md section 6: unique, and
 * no name inside another) in time proportional to its own length, not to the number of files:
 * a gather task of 50,000 inputs is built in linear time. Internal to the master library. */
#ifndef WQ_TASK_NAMES_H
#define WQ_TASK_NAMES_H

#include <stddef.h>

struct task_names;

/* Checks NAME (syntax already checked) for direction DIR (0 inputs, 1 outputs) against the names
 * in *IX and adds it. *IX is made at first use. 0, or a negative code with *WHY (malloc'd) worded
 * as wq_name_check_list words it; NAME is then not added. NAME is copied. */
int task_names_add(struct task_names **ix, int dir, int kind, const char *name, char **why);
/* How many names direction DIR holds. */
size_t task_names_count(const struct task_names *ix, int dir);
/* The last file of direction DIR's list, kept here so that appending is O(1) (NULL: none). */
void *task_names_last(const struct task_names *ix, int dir);
void task_names_set_last(struct task_names *ix, int dir, void *last);
void task_names_free(struct task_names *ix);

#endif
