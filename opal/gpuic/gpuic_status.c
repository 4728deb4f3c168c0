#include "gpuic_status.h"

const char *gpuic_status_string(gpuic_status_t status)
{
    switch (status) {
    case GPUIC_OK:                return "success";
    case GPUIC_INPROGRESS:        return "in progress";
    case GPUIC_ERR_NO_MEMORY:     return "out of memory";
    case GPUIC_ERR_INVALID_PARAM: return "invalid parameter";
    case GPUIC_ERR_NO_RESOURCE:   return "no resource (queue or table full)";
    case GPUIC_ERR_OUT_OF_RANGE:  return "access outside the registered region";
    case GPUIC_ERR_UNSUPPORTED:   return "not supported";
    case GPUIC_ERR_TRANSPORT:     return "transport error";
    case GPUIC_ERR_BAD_KEY:       return "invalid or stale memory key";
    case GPUIC_ERR_TIMED_OUT:     return "timed out";
    case GPUIC_ERR_PEER_FAILED:   return "peer unreachable";
    case GPUIC_ERR_BAD_OPCODE:    return "unknown descriptor opcode";
    case GPUIC_ERR_NO_DEVICE:     return "no CUDA device or driver";
    case GPUIC_ERR_ENGINE_FAILED: return "progress engine (proxy thread) failed";
    case GPUIC_ERR_QUEUE_STUCK:   return "send queue stuck (slots reserved, never published)";
    }
    return "unknown status";
}
