/* docker_name.h: what an image name of a container engine may be, checked the same way by the
 * workflow parser, the Work Queue master and the worker's protocol parser. */
#ifndef HTC_DOCKER_NAME_H
#define HTC_DOCKER_NAME_H

#include <stdbool.h>

/* The longest image name accepted. */
#define DOCKER_IMAGE_NAME_MAX 255

/* True when S is an image name as engines spell it ([registry/]path[:tag][@digest]): 1 to
 * DOCKER_IMAGE_NAME_MAX letters, digits and . _ - / : @, starting with a letter or digit. */
bool docker_image_name_ok(const char *s);

#endif
