/* Doubles of the libmicrohttpd request accessors for the fuzz targets (fuzz_req.c): every
 * header, query argument and cookie has the value set here (NULL: absent). */
#ifndef TESTS_FUZZ_FUZZ_REQ_H
#define TESTS_FUZZ_FUZZ_REQ_H

void fuzz_req_set_param(const char *value);

#endif
