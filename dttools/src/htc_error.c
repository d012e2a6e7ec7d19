/* htc_error.c: descriptions of the project's error codes (see htc_error.h). */
#include "htc_error.h"

#include <string.h>

#include "banned.h"

const char *htc_strerror(int code)
{
	switch (code) {
	case HTC_OK: return "success";
	case HTC_EPARSE: return "malformed input";
	case HTC_ERANGE: return "value out of range";
	case HTC_ETOOBIG: return "size limit exceeded";
	case HTC_EPROTO: return "protocol error";
	case HTC_EVERSION: return "incompatible version";
	case HTC_EAUTH: return "authentication failed";
	case HTC_ECYCLE: return "dependency cycle";
	case HTC_EUNDEF: return "undefined name";
	case HTC_EDUP: return "duplicate definition";
	case HTC_EUNSUP: return "operation not supported";
	case HTC_ELIMIT: return "resource limit exceeded";
	case HTC_ECORRUPT: return "corrupt data";
	default: break;
	}
	if (code < 0 && code > -HTC_ERR_BASE)
		return strerror(-code);
	return "unknown error";
}
