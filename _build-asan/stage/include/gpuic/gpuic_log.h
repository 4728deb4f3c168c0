/*
 * gpuic_log.h - leveled logging for libgpuic and the layers above it.
 *
 * Messages go to stderr prefixed with "[gpuic host:pid]".  A message is printed when its level
 * is at or below the current verbosity.  Errors are logged once, where they are decided.
 */
#ifndef GPUIC_LOG_H
#define GPUIC_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpuic_log_level {
    GPUIC_LOG_ERROR = 1, /**< something failed that the user must hear about */
    GPUIC_LOG_WARN  = 2, /**< degraded but working */
    GPUIC_LOG_INFO  = 3, /**< one line per window or engine event */
    GPUIC_LOG_DEBUG = 4, /**< per-call decisions (user errors are reported here) */
    GPUIC_LOG_TRACE = 5  /**< per-operation detail */
} gpuic_log_level_t;

/** Sets the verbosity (0 silences everything, including errors). */
void gpuic_log_set_level(int level);

/** Returns the current verbosity. */
int gpuic_log_get_level(void);

/** True when a message of this level would be printed (cheap; use it to guard costly work). */
static inline int gpuic_log_enabled(int level)
{
    return level <= gpuic_log_get_level();
}

/** Prints one line at the given level, printf-style; a newline is appended. */
void gpuic_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif /* GPUIC_LOG_H */
