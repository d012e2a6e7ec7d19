/* htc_error.h: the project's error convention. Functions return 0 on success
 * or a negative code: either -errno, or one of the project codes below (all
 * below -HTC_ERR_BASE so they never collide with errno values). */
#ifndef HTC_ERROR_H
#define HTC_ERROR_H

#define HTC_ERR_BASE 10000

enum htc_error {
	HTC_OK = 0,
	HTC_EPARSE = -(HTC_ERR_BASE + 1),    /* malformed input text */
	HTC_ERANGE = -(HTC_ERR_BASE + 2),    /* value outside its allowed range */
	HTC_ETOOBIG = -(HTC_ERR_BASE + 3),   /* a hard size cap was reached */
	HTC_EPROTO = -(HTC_ERR_BASE + 4),    /* protocol violation by a peer */
	HTC_EVERSION = -(HTC_ERR_BASE + 5),  /* incompatible version */
	HTC_EAUTH = -(HTC_ERR_BASE + 6),     /* authentication failed */
	HTC_ECYCLE = -(HTC_ERR_BASE + 7),    /* dependency cycle */
	HTC_EUNDEF = -(HTC_ERR_BASE + 8),    /* undefined name */
	HTC_EDUP = -(HTC_ERR_BASE + 9),      /* duplicate definition */
	HTC_EUNSUP = -(HTC_ERR_BASE + 10),   /* not supported by this driver/build */
	HTC_ELIMIT = -(HTC_ERR_BASE + 11),   /* a resource limit was exceeded */
	HTC_ECORRUPT = -(HTC_ERR_BASE + 12), /* stored data failed validation */
	HTC_ERR_LAST = -(HTC_ERR_BASE + 13)
};

/* Text for a return code: a project code's description, or strerror(-code)
 * for a negative errno. Never NULL; the string is static. */
const char *htc_strerror(int code);

#endif
