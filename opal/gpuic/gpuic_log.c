#include "gpuic_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int gpuic_log_level_current = GPUIC_LOG_ERROR;

void gpuic_log_set_level(int level)
{
    gpuic_log_level_current = level;
}

int gpuic_log_get_level(void)
{
    return gpuic_log_level_current;
}

void gpuic_log(int level, const char *fmt, ...)
{
    static const char *names[] = {"", "error", "warn", "info", "debug", "trace"};
    char host[64] = "?";
    char line[1024];
    va_list ap;

    if (!gpuic_log_enabled(level)) {
        return;
    }
    gethostname(host, sizeof(host) - 1);
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One fprintf per line so that lines from several threads do not interleave. */
    fprintf(stderr, "[gpuic %s:%d] %s: %s\n", host, (int)getpid(),
            (level >= 1 && level <= 5) ? names[level] : "log", line);
}
