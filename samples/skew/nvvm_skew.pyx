# A consumer built against cuda-bindings 12.9 that cimports from
# cuda.bindings.cynvvm, a module 12.8.0 does not have at all.
from cuda.bindings.cynvvm cimport nvvmResult, nvvmVersion
from cuda.bindings.cydriver cimport CUresult, cuInit


def version():
    cdef int major = 0, minor = 0
    return <int>nvvmVersion(&major, &minor)


def init():
    return <int>cuInit(0)
