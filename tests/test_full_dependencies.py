"""worker_cuda.full_dependencies on a fake runtime (no GPU): only the programmatic edges that leave the last
node of a call become full; the edges inside a call and the full ones are left alone."""

from types import SimpleNamespace

from evaluator.worker_cuda import full_dependencies

DEFAULT, PROGRAMMATIC = 0, 1
PORT_DEFAULT, PORT_PROGRAMMATIC = 0, 1


class FakeRuntime:
    """The graph calls full_dependencies makes, over a list of edges (from, to, type, port)."""

    cudaGraphDependencyType = SimpleNamespace(cudaGraphDependencyTypeDefault=DEFAULT)
    cudaGraphKernelNodePortDefault = PORT_DEFAULT

    def __init__(self, edges):
        self.edges = [tuple(e) for e in edges]
        self.removed, self.added = [], []

    def cudaGraphGetEdges(self, graph, n=0):
        if not n:
            return 0, [], [], [], len(self.edges)
        data = [SimpleNamespace(type=t, from_port=p) for _, _, t, p in self.edges]
        return 0, [e[0] for e in self.edges], [e[1] for e in self.edges], data, len(self.edges)

    def cudaGraphRemoveDependencies(self, graph, frm, to, data, n):
        assert len(frm) == len(to) == len(data) == n
        self.removed += list(zip(frm, to, [(d.type, d.from_port) for d in data]))
        return (0,)

    def cudaGraphAddDependencies(self, graph, frm, to, data, n):
        assert data is None and len(frm) == len(to) == n  # default edge data: full dependencies
        self.added += list(zip(frm, to))
        return (0,)


def test_only_programmatic_edges_between_calls_become_full(monkeypatch):
    import evaluator.worker_cuda as wc
    monkeypatch.setattr(wc, "_ok", lambda result, what: result[1:] if len(result) > 2 else None)
    # three calls of a GEMM (nodes 1, 3, 5) and its reduction (2, 4, 6) launched as its dependent; the second
    # and third calls' GEMMs are dependent launches too
    edges = [(1, 2, PROGRAMMATIC, PORT_PROGRAMMATIC),   # inside call 0: stays
             (2, 3, PROGRAMMATIC, PORT_PROGRAMMATIC),   # call 0 -> call 1: made full
             (3, 4, PROGRAMMATIC, PORT_PROGRAMMATIC),   # inside call 1: stays
             (4, 5, DEFAULT, PORT_DEFAULT),             # call 1 -> call 2, already full: stays
             (5, 6, PROGRAMMATIC, PORT_PROGRAMMATIC)]   # inside call 2: stays
    rt = FakeRuntime(edges)
    assert full_dependencies(rt, graph=None, tails={2, 4, 6}) == 1
    assert rt.removed == [(2, 3, (PROGRAMMATIC, PORT_PROGRAMMATIC))] and rt.added == [(2, 3)]


def test_an_edge_with_a_programmatic_port_alone_counts_and_no_edges_is_no_call(monkeypatch):
    import evaluator.worker_cuda as wc
    monkeypatch.setattr(wc, "_ok", lambda result, what: result[1:] if len(result) > 2 else None)
    rt = FakeRuntime([(1, 2, DEFAULT, PORT_PROGRAMMATIC)])  # a launch-completion / programmatic port
    assert full_dependencies(rt, graph=None, tails={1}) == 1 and rt.added == [(1, 2)]
    empty = FakeRuntime([])
    assert full_dependencies(empty, graph=None, tails={1}) == 0 and not empty.removed and not empty.added


class FakeRuntime12(FakeRuntime):
    """CUDA 12's bindings: the calls with edge data carry a suffix; the plain ones would lose it."""

    cudaGraphGetEdges_v2 = FakeRuntime.cudaGraphGetEdges
    cudaGraphRemoveDependencies_v2 = FakeRuntime.cudaGraphRemoveDependencies
    cudaGraphAddDependencies_v2 = FakeRuntime.cudaGraphAddDependencies

    def _without_edge_data(self, *args):
        raise AssertionError("a graph call without edge data was made")

    cudaGraphGetEdges = cudaGraphRemoveDependencies = cudaGraphAddDependencies = _without_edge_data


def test_cuda_12_bindings_use_the_calls_with_edge_data(monkeypatch):
    import evaluator.worker_cuda as wc
    monkeypatch.setattr(wc, "_ok", lambda result, what: result[1:] if len(result) > 2 else None)
    rt = FakeRuntime12([(1, 2, PROGRAMMATIC, PORT_PROGRAMMATIC), (2, 3, PROGRAMMATIC, PORT_PROGRAMMATIC)])
    assert full_dependencies(rt, graph=None, tails={2}) == 1 and rt.added == [(2, 3)]
