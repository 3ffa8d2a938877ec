# Values that tell a caller which layout's provider it reached:
# 2 for the bindings layout, 1 for the legacy one.
cudaCorpusLayout = 2 if __name__.startswith("cuda.bindings.") else 1

cdef CUresult cuInit(unsigned int Flags) except ?-1 nogil:
    return <CUresult>(100 * cudaCorpusLayout + Flags)

cdef CUresult cuDeviceGetCount(int* count) except ?-1 nogil:
    count[0] = 10 * cudaCorpusLayout
    return 0

cdef CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource, GLuint buffer, unsigned int Flags) except ?-1 nogil:
    pCudaResource[0] = <CUgraphicsResource><size_t>(1000 * cudaCorpusLayout + buffer)
    return <CUresult>Flags

cdef class CUstreamHolder:
    def __init__(self, long long handle=0):
        self.handle = handle

    cdef long long get(self):
        return self.handle * 10 + cudaCorpusLayout
