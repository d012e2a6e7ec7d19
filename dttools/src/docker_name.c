/* docker_name.c: image names of container engines (see docker_name.h). */
#include "docker_name.h"

#include <ctype.h>
#include <string.h>

#include "banned.h"

bool docker_image_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > DOCKER_IMAGE_NAME_MAX || !isalnum((unsigned char)s[0]))
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-/:@", *p))
			return false;
	return true;
}
