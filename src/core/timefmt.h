/*
 * timefmt.h - timestamps as Envoy prints them: a protobuf Timestamp in its JSON mapping with
 * milliseconds ("2023-12-26T06:37:10.000Z"), as /config_dump's last_updated and the xDS
 * client's update times show them.
 */
#ifndef WF_CORE_TIMEFMT_H
#define WF_CORE_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Format t (seconds since the epoch, UTC) as "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf (at least 32
 * bytes), milliseconds rounded. A time gmtime cannot represent prints as the epoch. Returns
 * buf. */
char *wf_timestamp_ms(double t, char *buf, size_t cap);

/* Format t (seconds since the epoch, UTC) as RFC 3339 without fraction,
 * "YYYY-MM-DDTHH:MM:SSZ" (certificates' NotAfter in weft-pilot's messages); a time gmtime
 * cannot represent prints as its number of seconds. Returns buf. */
char *wf_timestamp_s(int64_t t, char *buf, size_t cap);

#endif
