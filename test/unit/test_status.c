/* Status strings are distinct and never NULL; success values are recognised. */
#include <string.h>

#include "gpuic.h"
#include "unit_test.h"

int main(void)
{
    const gpuic_status_t all[] = {
        GPUIC_OK, GPUIC_INPROGRESS, GPUIC_ERR_NO_MEMORY, GPUIC_ERR_INVALID_PARAM,
        GPUIC_ERR_NO_RESOURCE, GPUIC_ERR_OUT_OF_RANGE, GPUIC_ERR_UNSUPPORTED,
        GPUIC_ERR_TRANSPORT, GPUIC_ERR_BAD_KEY, GPUIC_ERR_TIMED_OUT, GPUIC_ERR_PEER_FAILED,
        GPUIC_ERR_BAD_OPCODE, GPUIC_ERR_NO_DEVICE, GPUIC_ERR_ENGINE_FAILED,
        GPUIC_ERR_QUEUE_STUCK};
    const size_t n = sizeof(all) / sizeof(all[0]);

    for (size_t i = 0; i < n; ++i) {
        CHECK(gpuic_status_string(all[i]) != NULL);
        CHECK(strcmp(gpuic_status_string(all[i]), "unknown status") != 0);
        CHECK(gpuic_status_is_ok(all[i]) == (all[i] >= 0));
        for (size_t j = 0; j < i; ++j) {
            CHECK(strcmp(gpuic_status_string(all[i]), gpuic_status_string(all[j])) != 0);
        }
    }
    CHECK(strcmp(gpuic_status_string((gpuic_status_t)-999), "unknown status") == 0);
    return unit_test_result("test_status");
}
