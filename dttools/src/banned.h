/* banned.h: functions this project never calls, because they cannot be used
 * safely (unbounded copies, hidden static state). Include it last in every .c
 * file, after the system headers; `make lint` also checks for them. */
#ifndef HTC_BANNED_H
#define HTC_BANNED_H

#pragma GCC poison strcpy strcat sprintf vsprintf gets strtok

#endif
