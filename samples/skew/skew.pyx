# A consumer built against cuda-bindings 13.0.3 that may meet an older 13.x: it
# cimports cuCheckpointProcessRestore, which cuda-bindings 13.0.0 and 13.0.1
# lack (13.0.2 added it), beside functions every 13.x release has.
from cuda.bindings.cydriver cimport (CUresult, cuInit, cuDeviceGetCount, cuCheckpointProcessRestore,
                                     CUcheckpointRestoreArgs)
from cuda.bindings.cyruntime cimport cudaError_t, cudaGetDeviceCount


def init():
    return <int>cuInit(0)


def device_count():
    cdef int n = 0
    return <int>cuDeviceGetCount(&n)


def runtime_device_count():
    cdef int n = 0
    return <int>cudaGetDeviceCount(&n)


def checkpoint_restore():
    return <int>cuCheckpointProcessRestore(0, <CUcheckpointRestoreArgs *>NULL)
