# Corpus provider: the NVRTC C API of cuda-python in miniature.
# The same source is installed as cuda.bindings.cynvrtc and as cuda.cnvrtc.

cdef extern from *:
    """
    #ifndef CORPUS_CYNVRTC_TYPES
    #define CORPUS_CYNVRTC_TYPES
    typedef enum nvrtcResult { NVRTC_SUCCESS = 0, NVRTC_ERROR_INVALID_INPUT = 3 } nvrtcResult;
    #endif
    """
    ctypedef enum nvrtcResult:
        NVRTC_SUCCESS
        NVRTC_ERROR_INVALID_INPUT

# Mangled with this module's path in capsule signatures
# (__pyx_t_4cuda_8bindings_7cynvrtc_nvrtcProgramId).
ctypedef long long nvrtcProgramId

cdef nvrtcResult nvrtcVersion(int* major, int* minor) except ?NVRTC_ERROR_INVALID_INPUT nogil
cdef nvrtcResult nvrtcGetProgramSize(nvrtcProgramId prog, size_t* size) except ?NVRTC_ERROR_INVALID_INPUT nogil
