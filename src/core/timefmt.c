#include "core/timefmt.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

char *wf_timestamp_ms(double t, char *buf, size_t cap)
{
    double whole = floor(t);
    long long ms = llround((t - whole) * 1000.0);
    time_t secs = (time_t)whole;
    if (ms >= 1000) {
        secs++;
        ms -= 1000;
    }
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, cap, "1970-01-01T00:00:00.000Z");
        return buf;
    }
    snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    return buf;
}

char *wf_timestamp_s(int64_t t, char *buf, size_t cap)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (!gmtime_r(&tt, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, cap, "%lld", (long long)t);
    return buf;
}
