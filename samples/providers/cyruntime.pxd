# Corpus provider: the runtime-level C API of cuda-python in miniature.
# The same source is installed as cuda.bindings.cyruntime and as cuda.ccudart
# (@CYNVRTC@ replaced with the layout's nvrtc module).

# A typedef of another provider module in this module's capsule signatures
# (__pyx_t_4cuda_8bindings_7cynvrtc_nvrtcProgramId in cyruntime's). cynvrtc
# declares no variable or type: Cython imports those of every module a
# consumer cimports, even through this one, and cyruntime's consumers would
# then import cydriver too, which real ones do not.
from @CYNVRTC@ cimport nvrtcProgramId

cdef extern from *:
    """
    #ifndef CORPUS_CYRUNTIME_TYPES
    #define CORPUS_CYRUNTIME_TYPES
    #include <stddef.h>
    typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorCallRequiresNewerDriver = 36 } cudaError_t;
    enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyDefault = 4 };
    typedef struct CUstream_st *cudaStream_t;
    #endif
    """
    enum cudaError:
        cudaSuccess
        cudaErrorInvalidValue
        cudaErrorCallRequiresNewerDriver
    ctypedef cudaError cudaError_t
    enum cudaMemcpyKind:
        cudaMemcpyHostToHost
        cudaMemcpyDefault
    ctypedef struct CUstream_st:
        pass
    ctypedef CUstream_st* cudaStream_t

cdef cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) except ?cudaErrorCallRequiresNewerDriver nogil
cdef cudaError_t cudaGetDeviceCount(int* count) except ?cudaErrorCallRequiresNewerDriver nogil

# Declared outside an extern block, so that capsule signatures carry it
# mangled with this module's path, as cuda-python's cudaStreamAttrID
# (__pyx_t_4cuda_8bindings_9cyruntime_cudaStreamAttrID).
ctypedef int cudaStreamAttrID

cdef cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, cudaStreamAttrID attr, int* value) except ?cudaErrorCallRequiresNewerDriver nogil
cdef cudaError_t cudaProgramGetLayout(nvrtcProgramId prog, int* value) except ?cudaErrorCallRequiresNewerDriver nogil
