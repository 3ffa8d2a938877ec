# Corpus provider: the runtime-level C API of cuda-python in miniature.
# The same source is installed as cuda.bindings.cyruntime and as cuda.ccudart.

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
