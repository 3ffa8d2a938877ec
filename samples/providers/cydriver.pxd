# Corpus provider: the driver-level C API of cuda-python in miniature.
# The same source is installed as cuda.bindings.cydriver and as cuda.ccuda.

cdef extern from *:
    """
    #ifndef CORPUS_CYDRIVER_TYPES
    #define CORPUS_CYDRIVER_TYPES
    typedef int CUresult;
    typedef struct CUgraphicsResource_st *CUgraphicsResource;
    #endif
    """
    ctypedef int CUresult
    ctypedef struct CUgraphicsResource_st:
        pass
    ctypedef CUgraphicsResource_st* CUgraphicsResource

# Declared outside an extern block, so Cython mangles it with the module path
# (__pyx_t_4cuda_8bindings_8cydriver_GLuint) and capsule signatures carry it.
ctypedef unsigned int GLuint

cdef CUresult cuInit(unsigned int Flags) except ?-1 nogil
cdef CUresult cuDeviceGetCount(int* count) except ?-1 nogil
cdef CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource, GLuint buffer, unsigned int Flags) except ?-1 nogil

cdef int cudaCorpusLayout

cdef class CUstreamHolder:
    cdef public long long handle
    cdef long long get(self)
