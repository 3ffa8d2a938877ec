# As nvvm_skew, and it cimports nvvmGetErrorString, whose return type
# (const char *) carries no error a stand-in could return.
from cuda.bindings.cynvvm cimport nvvmResult, nvvmVersion, nvvmGetErrorString


def message():
    return nvvmGetErrorString(<nvvmResult>0)


def version():
    cdef int major = 0, minor = 0
    return <int>nvvmVersion(&major, &minor)
