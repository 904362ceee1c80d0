#ifndef STOREFS_CPOSTGRES_SHIM_H
#define STOREFS_CPOSTGRES_SHIM_H

/* libpq, PostgreSQL's client library (Debian's libpq-dev), for the PostgreSQL store. Swift
 * imports it as it is: nothing needs wrapping. */
#include <libpq-fe.h>

#endif
