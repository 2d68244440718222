"""Space specs: every listed spec builds its space; products, files, plug-ins and mistakes."""

import math

import numpy as np
import pytest
import torch

from manibo.exceptions import ConfigurationError, InputDataError, ManiboWarning
from manibo.spaces import (
    SE3,
    Box,
    Circle,
    CompactProductSpace,
    Graph,
    Grassmann,
    Hyperbolic,
    Mesh,
    ProductSpace,
    RealProjectiveSpace,
    SpecialOrthogonal,
    SpecialUnitary,
    Sphere,
    SymmetricPositiveDefinite,
    Torus,
    available_spaces,
    make_space,
    register_space,
)
from manibo.spaces.registry import SPACES, normal_spec


@pytest.mark.parametrize(
    ("spec", "kind", "point_shape"),
    [
        ("sphere1", Sphere, (2,)),
        ("sphere5", Sphere, (6,)),
        ("circle", Circle, (1,)),
        ("torus3", Torus, (3,)),
        ("so3", SpecialOrthogonal, (9,)),
        ("so4", SpecialOrthogonal, (16,)),
        ("su2", SpecialUnitary, (8,)),
        ("rp2", RealProjectiveSpace, (3,)),
        ("grassmann:2,4", Grassmann, (8,)),
        ("grassmann: 3 , 5", Grassmann, (15,)),
        ("hyperbolic2", Hyperbolic, (3,)),
        ("spd2", SymmetricPositiveDefinite, (4,)),
        ("se3", SE3, (12,)),
        ("box4", Box, (4,)),
        ("icosphere1", Mesh, (1,)),
        ("sphere2*circle", CompactProductSpace, (4,)),
        (" so3 * torus2 ", CompactProductSpace, (11,)),
        ("sphere2*box1", ProductSpace, (4,)),
        ("hyperbolic2*circle", ProductSpace, (4,)),
    ],
)
def test_specs_build_their_spaces(spec, kind, point_shape):
    space = make_space(spec)
    assert type(space) is kind and space.point_shape == point_shape
    x = space.random(5, generator=torch.Generator().manual_seed(0))
    space.check(x)


@pytest.mark.parametrize(
    ("spec", "lower", "upper"),
    [
        ("box2?bounds=0:5,-1:1", [0.0, -1.0], [5.0, 1.0]),
        ("box3?bounds=-2:2", [-2.0] * 3, [2.0] * 3),  # one interval for every coordinate
        ("se3?bounds=-1:1,-1:1,0:2", [-1.0, -1.0, 0.0], [1.0, 1.0, 2.0]),
    ],
)
def test_box_and_se3_specs_take_bounds(spec, lower, upper):
    space = make_space(spec)
    box = space if isinstance(space, Box) else space.factors[0]
    assert box.lower.tolist() == lower and box.upper.tolist() == upper
    x = space.random(200, generator=torch.Generator().manual_seed(0))
    position = x[:, : len(lower)]
    assert (position >= torch.tensor(lower)).all() and (position <= torch.tensor(upper)).all()
    # the whole range is used, not the unit cube inside it
    assert (
        position.amax(0) - position.amin(0) > 0.9 * (torch.tensor(upper) - torch.tensor(lower))
    ).all()


def test_spd_and_hyperbolic_specs_take_their_domain():
    spd = make_space("spd3?eigenvalues=100:2000")
    assert spd.bounds == (100.0, 2000.0) and spd.sampling == "eigenvalues"
    eigenvalues = torch.linalg.eigvalsh(spd.random(100, generator=0).reshape(-1, 3, 3))
    assert eigenvalues.min() >= 100 and eigenvalues.max() <= 2000
    hyperbolic = make_space("hyperbolic2?radius=3")
    assert hyperbolic.radius == 3.0
    x = hyperbolic.random(500, generator=0)
    assert 2.5 < float(torch.arccosh(x[:, 0]).max()) <= 3.0  # geodesic distance to the origin
    product = make_space("so3*box2?bounds=0:5,0:1")
    assert product.factors[1].upper.tolist() == [5.0, 1.0]


def test_integer_and_categorical_specs_build_the_range_and_the_choices_they_name():
    assert make_space("categorical3").k == 3
    assert make_space("so3*categorical3").factors[1].k == 3
    integers = make_space("integers?range=-5:20")
    assert (integers.low, integers.high) == (-5, 20)
    assert integers.all_points().squeeze(-1).tolist() == list(range(-5, 21))


def test_options_are_spelled_one_way_so_that_one_run_is_resumed():
    assert normal_spec(" box02 ? bounds = 0:5.0 , -1:1 ") == "box2?bounds=0:5,-1:1"
    assert normal_spec("box3?bounds=0:1e3") == "box3?bounds=0:1000"
    assert normal_spec("so3 * box2?bounds=0:.5") == "so3*box2?bounds=0:0.5"
    # a file's ?eigenpairs= is the file argument's, as before
    assert normal_spec("graph:roads.txt?eigenpairs=050") == "graph:roads.txt?eigenpairs=50"


def test_the_spd_spec_draws_designs_with_eigenvalues_uniform_on_the_box():
    space = make_space("spd2")
    assert space.sampling == "eigenvalues" and space.bounds == (1e-3, 5.0)
    # the other samplings of SymmetricPositiveDefinite, for bounds that span orders of magnitude
    wide = make_space("spd2?eigenvalues=10:10000&sampling=log-eigenvalues")
    assert wide.sampling == "log-eigenvalues" and wide.bounds == (10.0, 10000.0)
    eigenvalues = torch.linalg.eigvalsh(wide.random(2000, generator=0).reshape(-1, 2, 2))
    assert 0.3 < float((eigenvalues < 100).double().mean()) < 0.37  # a third of the log range
    assert make_space("spd2?sampling=volume").sampling == "volume"
    assert normal_spec("spd2 ? sampling=volume&eigenvalues=1:5.0") == (
        "spd2?eigenvalues=1:5&sampling=volume"
    )


def test_the_builtin_specs_are_listed_and_each_family_member_builds():
    assert available_spaces() == [
        "box<d>", "categorical<k>", "circle", "graph:FILE", "grassmann:K,N", "hyperbolic<d>",
        "icosphere<k>", "integers", "mesh:FILE", "rp<d>", "se3", "so<n>", "spd<n>", "sphere<d>",
        "su<n>", "torus<n>",
    ]  # fmt: skip
    box = make_space("box2")
    assert box.lower.tolist() == [0.0, 0.0] and box.upper.tolist() == [1.0, 1.0]
    assert make_space("sphere3").dim == 3 and make_space("icosphere0").num_points == 12
    factors = make_space("sphere2*circle*so3").factors
    assert [type(f) for f in factors] == [Sphere, Circle, SpecialOrthogonal]


@pytest.mark.parametrize(
    "spec",
    [
        "grassmann:2",
        "grassmann:2,4,1",
        "grassmann:a,b",
        "grassmann:4,4",
        "grassmann:1_0,2_0",
        "grassmann:+2,4",
    ],
)
def test_grassmann_specs_need_two_integers_k_below_n(spec):
    with pytest.raises(ConfigurationError, match="grassmann|Grassmann"):
        make_space(spec)


def test_graphs_from_edge_lists_and_adjacency_files(tmp_path):
    edges = tmp_path / "roads.txt"
    edges.write_text("# a path 0-1-2 and a heavy edge 2-3\n0 1\n1 2\n2 3\n")
    graph = make_space(f"graph:{edges}")
    assert isinstance(graph, Graph) and graph.num_points == 4 and graph.num_edges == 3
    weighted = tmp_path / "weighted.txt"
    weighted.write_text("0 1 1.0\n1 2 1.0\n2 3 5.0\n")
    adjacency = np.zeros((4, 4))
    for i, j, w in [(0, 1, 1.0), (1, 2, 1.0), (2, 3, 5.0)]:
        adjacency[i, j] = adjacency[j, i] = w
    np.save(tmp_path / "adjacency.npy", adjacency)
    from_npy = make_space(f"graph:{tmp_path / 'adjacency.npy'}")
    assert from_npy.fingerprint() == Graph(adjacency).fingerprint()
    assert make_space(f"graph:{weighted}").fingerprint() == from_npy.fingerprint()
    (tmp_path / "bad.txt").write_text("0 1 2 3\n")
    with pytest.raises(InputDataError, match=r"line 1 .*two or three numbers"):
        make_space(f"graph:{tmp_path / 'bad.txt'}")
    with pytest.raises(InputDataError, match="no such file"):
        make_space(f"graph:{tmp_path / 'missing.txt'}")


def test_edge_lists_may_give_weights_on_some_lines_only(tmp_path):
    """'i j [weight]': a line without a weight has weight 1 (a mixed file was refused with
    NumPy's advice to "use `usecols`"); a bad line is named by its number."""
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("0 1\n1 2 0.5  # a slow road\n\n2 3\n")
    adjacency = np.zeros((4, 4))
    for i, j, w in [(0, 1, 1.0), (1, 2, 0.5), (2, 3, 1.0)]:
        adjacency[i, j] = adjacency[j, i] = w
    assert make_space(f"graph:{mixed}").fingerprint() == Graph(adjacency).fingerprint()
    bad_lines = {
        "words": "0 1\n1 two\n",
        "long": "0 1\n1 2 1.0 7\n",
        "semicolons": "0 1\n1;2\n",
        "nan": "0 1\n1 nan\n",
        "inf": "0 1\ninf 2\n",
    }
    for name, text in bad_lines.items():
        (tmp_path / f"{name}.txt").write_text(text)
        with pytest.raises(InputDataError, match=r"line 2 .*two or three numbers.*'i j' or"):
            make_space(f"graph:{tmp_path / f'{name}.txt'}")
    (tmp_path / "latin.txt").write_bytes(b"0 1 # caf\xe9\n1 2\n")
    with pytest.raises(InputDataError, match="cannot read the edge list as text"):
        make_space(f"graph:{tmp_path / 'latin.txt'}")


def test_edge_lists_name_the_line_of_a_fractional_node_or_a_weight_not_positive(tmp_path):
    """'1 2.5' was reported as "(E, 2), got shape (2, 2)" and weight 0 or -1 as "shape (2,), got
    shape (2,) with values in [0, 1]", without the line."""
    cases = {
        "fractional": ("0 1\n1 2.5\n", r"line 2 \('1 2\.5'\) has the node index 2\.5; .*integers"),
        "negative_node": ("0 1\n-1 2\n", r"line 2 \('-1 2'\) has the node index -1; "),
        "zero": ("0 1\n\n1 2 0\n", r"line 3 \('1 2 0'\) has the weight 0; .*positive"),
        "negative": ("0 1\n1 2 -1\n", r"line 2 \('1 2 -1'\) has the weight -1; .*positive"),
        "inf": ("0 1 inf\n", r"line 1 \('0 1 inf'\) has the weight inf; .*positive"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / f"{name}.txt").write_text(text)
        with pytest.raises(InputDataError, match=rf"space 'graph:.*{name}\.txt': {message}"):
            make_space(f"graph:{tmp_path / f'{name}.txt'}")


def test_edge_lists_counted_from_1_or_listed_both_ways_are_named(tmp_path):
    """A file counted from 1 became a graph with an isolated node 0 that the optimiser could
    propose; edges listed both ways doubled their weights (eigenvalues 0.38 -> 0.76 on a path)."""
    from manibo.exceptions import ManiboWarning

    one_based = tmp_path / "one.txt"
    one_based.write_text("1 2\n2 3\n")
    with pytest.warns(ManiboWarning, match="isolated node 0 that .*; nodes are counted from 0"):
        assert make_space(f"graph:{one_based}").num_points == 4
    both = tmp_path / "both.txt"
    both.write_text("0 1\n1 0\n1 2\n2 1\n2 3\n2 3\n")
    with pytest.warns(ManiboWarning, match=r"3 line\(s\) repeat an edge listed before"):
        make_space(f"graph:{both}")


def test_edge_lists_as_networkx_and_pandas_write_them(tmp_path):
    """networkx.write_edgelist's "0 1 {'weight': 2.0}", a CSV with commas and a header line, and
    "source target weight" were refused as "not two or three numbers"."""
    plain = tmp_path / "plain.txt"
    plain.write_text("0 1 2.0\n1 2 0.5\n2 0 1\n")
    expected = make_space(f"graph:{plain}").fingerprint()
    files = {
        "networkx.txt": "0 1 {'weight': 2.0}\n1 2 {'weight': 0.5}\n2 0 {}\n",
        "pandas.csv": "source,target,weight\n0,1,2.0\n1,2,0.5\n2,0,1\n",
        "header.txt": "source target weight\n0 1 2.0\n1\t2\t0.5\n2 0\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        assert make_space(f"graph:{tmp_path / name}").fingerprint() == expected, name
    names = tmp_path / "names.txt"
    names.write_text("a b\nb c\n")
    with pytest.raises(InputDataError, match=r"line 2 \('b c'\) .*names of nodes are not read"):
        make_space(f"graph:{names}")


def test_edge_lists_of_node_identifiers_rather_than_indices_are_refused(tmp_path):
    """Edges '0 1, 1 2, 2 3, 3 40000' made a graph of 40001 nodes, 39996 of them isolated: 14 s,
    then "Raise `num_eigenpairs`"; with 3 2000000 the spectrum ran for minutes."""
    for top in (40_000, 2_000_000):
        path = tmp_path / f"ids{top}.txt"
        path.write_text(f"0 1\n1 2\n2 3\n3 {top}\n")
        with pytest.raises(
            InputDataError,
            match=rf"touch 5 distinct nodes but the largest node index is {top}, so {top - 4} of "
            rf"the {top + 1} nodes .* renumber them",
        ):
            make_space(f"graph:{path}")
    # fewer isolated nodes than touched ones is still a graph (nodes 4, 5, 6 unconnected)
    even = tmp_path / "even.txt"
    even.write_text("0 1\n1 2\n2 3\n3 7\n")
    with pytest.warns(ManiboWarning, match=r"no edge touches node\(s\) 4, 5, 6 \(3 of the 8"):
        assert make_space(f"graph:{even}").num_points == 8


def test_edge_lists_with_a_gap_in_the_numbering_name_the_isolated_nodes(tmp_path):
    """'0 1, 1 2, 5 6' silently built a graph of 7 nodes with isolated nodes 3 and 4, while a
    file counted from 1 was warned of its isolated node 0."""
    from manibo.exceptions import ManiboWarning

    gap = tmp_path / "gap.txt"
    gap.write_text("0 1\n1 2\n5 6\n")
    expected = (
        r"no edge touches node\(s\) 3, 4 \(2 of the 7 nodes 0 \.\. 6\), so the graph has 2 "
        r"isolated nodes .*renumber the nodes 0 \.\. n-1 without gaps"
    )
    with pytest.warns(ManiboWarning, match=expected):
        graph = make_space(f"graph:{gap}")
    assert graph.num_points == 7 and graph.num_edges == 3
    many = tmp_path / "many.txt"  # a path 0 .. 14 and the edge 21 22: nodes 15 .. 20 isolated
    many.write_text("".join(f"{i} {i + 1}\n" for i in range(14)) + "21 22\n")
    with pytest.warns(ManiboWarning, match=r"node\(s\) 15, 16, 17, 18, 19, \.\.\. \(6 of the 23"):
        make_space(f"graph:{many}")
    both = tmp_path / "both.txt"  # counted from 1, and a gap: node 0 and nodes 3, 4
    both.write_text("1 2\n5 6\n")
    with pytest.warns(ManiboWarning, match=r"0, 3, 4 .*a file that counts from 1 also needs it"):
        make_space(f"graph:{both}")


def test_mesh_file_errors_count_as_the_file_does(tmp_path):
    """Errors from the mesh's checks named 0-based vertices and triangle numbers ('face 722 =
    (0, 0, 1)' for the line 'f 1 1 2'), with neither the file nor the line; a file with no 'v'
    line said "shape (0,)"; split vertices ended in "Raise `num_eigenpairs`"."""
    square = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
    cases = {
        "degenerate": (
            square + "f 1 2 3\nf 1 3 4\nf 1 1 2\n",
            r"e\.g\. the face of line 7 \(vertices 1, 1, 2, counted from 1 as in the file\)",
        ),
        "loose": (
            square + "v 5 5 5\nf 1 2 3\nf 1 3 4\nl 4 5\n",
            r"used by no face, e\.g\. vertices 5 \(counted from 1\).*Delete the loose",
        ),
        "empty": ("o nothing\n", r"the file has no vertex lines \('v x y z'\)"),
        "no_faces": (square, r"the file has no face lines \('f i j k'\)"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / f"{name}.obj").write_text(text)
        with pytest.raises(InputDataError, match=rf"space 'mesh:.*{name}\.obj': .*{message}"):
            make_space(f"mesh:{tmp_path / f'{name}.obj'}")
    # an STL export: no two triangles share a vertex, so the mesh falls apart into triangles
    ball = Mesh.icosphere(3)  # 1280 triangles: more parts than the 500 eigenpairs kept
    lines = [f"v {x} {y} {z}" for face in ball.faces.tolist() for x, y, z in ball.vertices[face]]
    lines += [f"f {3 * k + 1} {3 * k + 2} {3 * k + 3}" for k in range(len(ball.faces))]
    (tmp_path / "split.obj").write_text("\n".join(lines) + "\n")
    with pytest.warns(ManiboWarning, match="repeat the position"):
        with pytest.raises(ConfigurationError, match="one part per triangle; merge duplicate"):
            make_space(f"mesh:{tmp_path / 'split.obj'}")


def test_meshes_from_obj_files(tmp_path):
    reference = Mesh.icosphere(1)
    lines = [f"v {x} {y} {z}" for x, y, z in reference.vertices.tolist()]
    # faces with texture and normal indices, counted from 1, as .obj writers put them
    lines += ["f " + " ".join(f"{i + 1}/1/1" for i in face) for face in reference.faces.tolist()]
    path = tmp_path / "ball.obj"
    path.write_text("# an icosphere\no ball\n" + "\n".join(lines) + "\n")
    mesh = make_space(f"mesh:{path}")
    assert mesh.fingerprint() == reference.fingerprint()
    # a quad is split into two triangles
    quad = tmp_path / "quad.obj"
    quad.write_text("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 0.5 1\nf 1 2 3 4\n")
    quad.write_text(quad.read_text() + "f 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n")
    assert make_space(f"mesh:{quad}").faces.tolist()[:2] == [[0, 1, 2], [0, 2, 3]]
    broken = tmp_path / "broken.obj"
    broken.write_text("v 0 0 zero\n")
    with pytest.raises(InputDataError, match=r"line 1 \('v 0 0 zero'\)"):
        make_space(f"mesh:{broken}")
    # relative (negative) indices count back from the last vertex read, as the format defines
    relative = tmp_path / "relative.obj"
    relative.write_text(quad.read_text().replace("f 1 2 3 4", "f -5 -4 -3 -2"))
    assert make_space(f"mesh:{relative}").fingerprint() == make_space(f"mesh:{quad}").fingerprint()
    short = tmp_path / "short.obj"  # a vertex with two coordinates: NumPy's ragged-array error
    short.write_text("v 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n")
    with pytest.raises(InputDataError, match=r"line 2 \('v 1 0'\).*3 coordinates, got 2"):
        make_space(f"mesh:{short}")
    beyond = tmp_path / "beyond.obj"  # -4 reaches before the first vertex; 4 past the last
    for face, named in (("f -4 -2 -1", "-4"), ("f 1 2 4", "4")):
        beyond.write_text(f"v 0 0 0\nv 1 0 0\nv 0 1 0\n{face}\n")
        message = rf"line 4 \('{face}'\) names vertex {named}, but the file has 3 vertices"
        with pytest.raises(InputDataError, match=message):
            make_space(f"mesh:{beyond}")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("sphere", "the space family 'sphere' needs its d: name a member such as 'sphere2'"),
        ("sphere0", "d must be at least 1, got 0; use e.g. 'sphere1'"),
        (
            "klein-bottle",
            "unknown space 'klein-bottle'; known: box<d>, categorical<k>, circle, graph:FILE, "
            "grassmann:K,N, hyperbolic<d>, icosphere<k>, integers, mesh:FILE",
        ),
        ("circle:2", "space 'circle' takes no ':' argument"),
        # a member of a family with bounds after ':' was an "unknown space 'spd3'"
        ("spd3:10,1000", "space 'spd3' takes no ':' argument, got 'spd3:10,1000'; write 'spd3'"),
        ("hyperbolic3:3", "Bounds are options of the specs that have them"),
        ("box2?", "options are written '?name=value' (several joined by '&'), got ''"),
        ("box2?bound=0:1", "space 'box2?bound=0:1' has no option 'bound'; its options: bounds."),
        ("sphere2?radius=3", "its options: none. Bounds are options of the specs that have them"),
        ("box2?bounds=0:1,0:1,0:1", "give one interval for all 2 coordinates or one per"),
        ("box2?bounds=1:0", "two finite numbers with lower < upper, got '1:0'"),
        ("box2?bounds=0:inf", "two finite numbers with lower < upper, got '0:inf'"),
        # typos were read as other numbers: 0:5.0.0 as 0:50, 1_0 as 10
        ("box2?bounds=0:5.0.0", "two finite numbers with lower < upper, got '0:5.0.0'"),
        ("box1?bounds=0:1 0", "two finite numbers with lower < upper, got '0:1 0'"),
        ("box2?bounds=1_0:20", "two finite numbers with lower < upper, got '1_0:20'"),
        ("hyperbolic2?radius=1.5.0", "the radius is a number, e.g. 3"),
        ("box2?bounds=0:1&bounds=0:2", "sets 'bounds' twice"),
        ("se3?bounds=0:1,0:1", "give one interval for all 3 coordinates or one per coordinate"),
        ("spd2?eigenvalues=-1:3", "give one interval 'lower:upper' of positive numbers"),
        ("spd2?eigenvalues=1:2,3:4", "give one interval 'lower:upper' of positive numbers"),
        ("hyperbolic2?radius=x", "the radius is a number, e.g. 3"),
        # float() reads these as 10 and as infinity
        ("hyperbolic2?radius=1_0", "the radius is a number, e.g. 3"),
        ("hyperbolic2?radius=inf", "the radius is a number, e.g. 3"),
        ("hyperbolic2?radius=20", "`radius` must lie in (0, 15.0]"),
        ("integers", "space 'integers' needs its range, e.g. 'integers?range=1:8'"),
        ("integers?range=1:8.5", "the range is two integers 'low:high', e.g. 'integers?range=1:8'"),
        ("integers?range=3:3", "'integers?range=3:3': the range needs low < high"),
        ("integers?range=5:1", "'integers?range=5:1': the range needs low < high"),
        ("integers?range=a:b", "the range is two integers 'low:high'"),
        ("integers?range=1:2:3", "the range is two integers 'low:high'"),
        ("integers?range=1_0:20", "the range is two integers 'low:high'"),
        ("integers?range=1:4,5:6", "the range is two integers 'low:high'"),
        ("integers?range=0:10000", "holds 10001 values, more than 10000; for a range this wide"),
        ("categorical1", "k must be at least 2, got 1; use e.g. 'categorical2'"),
        # near misses are named
        ("SO3*categorical3", "unknown space 'SO3' (did you mean 'so3'?); known: box<d>"),
        ("integer?range=2:5", "unknown space 'integer' (did you mean 'integers'?)"),
        ("spere2", "unknown space 'spere2' (did you mean 'sphere2'?)"),
        ("spd2?sampling=log", "the sampling is one of eigenvalues, log-eigenvalues, volume"),
        ("graph", "space 'graph' needs its FILE: write 'graph:FILE'"),
        ("graph:", "space 'graph:' needs its FILE after ':'"),
        ("sphere2*", "space 'sphere2*': a product has an empty factor; join space specs with *"),
        ("*circle", "a product has an empty factor"),
        ("so1", "n must be at least 2, got 1; use e.g. 'so2'"),
        ("hyperbolic1", "d must be at least 2, got 1; use e.g. 'hyperbolic2'"),
        ("", "a space spec must be a non-empty string such as 'sphere2'"),
        (3, "a space spec must be a non-empty string"),
    ],
)
def test_mistakes_get_clear_errors(spec, message):
    with pytest.raises(ConfigurationError) as info:
        make_space(spec)
    assert message in str(info.value)


def test_a_file_name_with_the_product_sign_is_explained(tmp_path):
    path = tmp_path / "ro*ads.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    with pytest.raises(ConfigurationError) as info:
        make_space(f"graph:{path}")
    message = str(info.value)
    assert message.startswith("unknown space 'ads.txt'")
    assert f"graph:{tmp_path}/ro*ads.txt was read as two factors" in message
    assert "rename the file" in message
    with pytest.raises(ConfigurationError) as info:  # a typo after a file: no file to rename
        make_space(f"graph:{tmp_path / 'roads.txt'}*boxx")
    assert "rename" not in str(info.value)


@pytest.fixture
def isolated_spaces(monkeypatch):
    monkeypatch.setattr(SPACES, "_objects", dict(SPACES._objects))


def test_registering_spaces_and_families(isolated_spaces):
    @register_space("ring", parameter="n", minimum=3, description="a cycle graph")
    def ring(n):
        return Graph.from_edges([[i, (i + 1) % n] for i in range(n)], n)

    assert "ring<n>" in available_spaces() and make_space("ring5").num_points == 5
    with pytest.raises(ConfigurationError, match="n must be at least 3, got 2"):
        make_space("ring2")
    with pytest.raises(ConfigurationError, match="'ring' is already registered"):
        register_space("ring")(Circle)
    with pytest.raises(ConfigurationError, match="must not end with a digit"):
        register_space("ring2", parameter="n")
    for name in ("a*b", "a?b"):
        with pytest.raises(ConfigurationError, match=r"must not hold ':', '\*' or '\?'"):
            register_space(name)
    with pytest.raises(ConfigurationError, match="not both"):
        register_space("twice", parameter="n", argument="FILE")


def test_registered_spaces_may_take_options(isolated_spaces):
    @register_space("ball", parameter="d", options=("radius",), description="a ball")
    def ball(d, radius="2"):
        return Hyperbolic(d, radius=float(radius))

    assert make_space("ball3?radius=1.5").radius == 1.5 and make_space("ball3").radius == 2.0
    assert normal_spec("ball3 ? radius=1.50") == "ball3?radius=1.5"

    texts = []

    @register_space("tagged", options=("model", "tag"))
    def tagged(model=None, tag=None):
        texts.append((model, tag))
        return Circle()

    make_space("tagged?model=v1.10&tag=run01")  # text, not numbers: passed as written
    make_space("tagged?model=1.2.3&tag=a b")
    assert texts == [("v1.10", "run01"), ("1.2.3", "a b")]
    with pytest.raises(ConfigurationError, match="takes no keyword argument 'colour'"):
        register_space("painted", options=("colour",))(lambda: Circle())
    with pytest.raises(ConfigurationError, match="not with a text `argument`"):
        register_space("filed", argument="FILE", options=("eigenpairs",))


def test_files_from_windows_editors_binary_files_and_pickles_are_read_or_refused_clearly(tmp_path):
    # a BOM hid the first line ('v' of vertex 1 was read as '\ufeffv'): "line 6 names vertex 4,
    # but the file has 3 vertices"; a binary .obj gave a UnicodeDecodeError traceback; a .npy
    # that is not a numeric array advised `allow_pickle=True`
    obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n"
    (tmp_path / "bom.obj").write_bytes(b"\xef\xbb\xbf" + obj.encode())
    (tmp_path / "plain.obj").write_text(obj)
    with_bom, plain = (
        make_space(f"mesh:{tmp_path / 'bom.obj'}"),
        make_space(f"mesh:{tmp_path / 'plain.obj'}"),
    )
    assert torch.equal(with_bom.vertices, plain.vertices)
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf0 1\n1 2\n2 0\r\n")
    assert make_space(f"graph:{tmp_path / 'bom.txt'}").num_points == 3
    (tmp_path / "binary.obj").write_bytes(bytes(range(256)))
    with pytest.raises(InputDataError, match="cannot read it as a text Wavefront .obj file"):
        make_space(f"mesh:{tmp_path / 'binary.obj'}")
    (tmp_path / "text.npy").write_text("0 1\n1 2\n")
    np.save(tmp_path / "objects.npy", np.array([[0, "a"], ["b", 0]], dtype=object))
    for name in ("text.npy", "objects.npy"):
        with pytest.raises(InputDataError, match="numeric .npy adjacency matrix") as info:
            make_space(f"graph:{tmp_path / name}")
        assert "allow_pickle" not in str(info.value)


def test_a_folder_named_as_a_graph_or_mesh_file_is_called_a_folder(tmp_path):
    # it was reported as "no such file", though it exists
    (tmp_path / "edges.txt").mkdir()
    for kind in ("graph", "mesh"):
        with pytest.raises(InputDataError, match="is a folder; name a file"):
            make_space(f"{kind}:{tmp_path / 'edges.txt'}")
    with pytest.raises(InputDataError, match="no such file"):
        make_space(f"graph:{tmp_path / 'missing.txt'}")


def test_a_builder_that_returns_no_space_is_named_when_its_space_is_built(isolated_spaces):
    register_space("test-not-a-space")(lambda: 42)
    for spec in ("test-not-a-space", "test-not-a-space*circle"):
        with pytest.raises(
            ConfigurationError,
            match=r"the builder registered as space 'test-not-a-space' must return a manibo "
            r"space \(a manibo.spaces.Space\), got int 42",
        ):
            make_space(spec)


def test_repeated_obj_faces_are_dropped_and_named_by_their_lines(tmp_path):
    """A double-sided .obj export repeats each face reversed; Mesh drops the copies with a
    warning that the mesh:FILE spec tells by the lines of the file."""
    from manibo.exceptions import ManiboWarning

    lines = ["v 0 0 0", "v 1 0 0", "v 0 1 0", "v 0 0 1", "f 1 2 3", "f 1 2 4", "f 1 3 4"]
    lines += ["f 2 3 4", "f 3 2 1"]  # line 9 repeats line 5, reversed
    path = tmp_path / "tetra.obj"
    path.write_text("\n".join(lines) + "\n")
    expected = (
        r"space 'mesh:.*tetra\.obj': 1 face\(s\) of the mesh repeat an earlier face.*the face "
        r"of line 9 \(vertices 3, 2, 1, counted from 1 as in the file\) repeats the face of "
        r"line 5 \(vertices 1, 2, 3, counted from 1"
    )
    with pytest.warns(ManiboWarning, match=expected):
        mesh = make_space(f"mesh:{path}")
    assert mesh.faces.tolist() == [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]


def test_graph_and_mesh_specs_set_the_eigenpairs_kept(tmp_path):
    """`Graph(A, num_eigenpairs=5000)` had no spelling in a spec: graph:FILE and mesh:FILE kept
    the default (all eigenpairs up to 2000 points, else 500)."""
    path = tmp_path / "path.txt"  # a path of 8 nodes: 8 distinct eigenvalues 2 - 2 cos(pi k / 8)
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(7)))
    graph = make_space(f"graph:{path}?eigenpairs=3")
    values, counts = graph.levels(graph.num_levels_available)
    assert graph.num_levels_available == 3 and counts.tolist() == [1.0, 1.0, 1.0]
    expected = [2 - 2 * math.cos(math.pi * k / 8) for k in range(3)]
    assert values.tolist() == pytest.approx(expected, abs=1e-12)
    assert make_space(f"graph:{path}").num_levels_available == 8
    # one spelling per space, as for family parameters (so3 and so03): one run, one journal
    assert normal_spec(f" graph: {path} ?eigenpairs=003 ") == f"graph:{path}?eigenpairs=3"
    np.save(tmp_path / "path.npy", np.eye(8, k=1) + np.eye(8, k=-1))
    assert make_space(f"graph:{tmp_path / 'path.npy'}?eigenpairs=3").fingerprint() == (
        graph.fingerprint()
    )
    obj = tmp_path / "ball.obj"
    ball = Mesh.icosphere(1)
    lines = [f"v {x} {y} {z}" for x, y, z in ball.vertices.tolist()]
    obj.write_text("\n".join(lines + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in ball.faces]))
    mesh = make_space(f"mesh:{obj}?eigenpairs=4")  # levels 1 and 3 (l = 0, 1) of the sphere
    assert mesh.levels(mesh.num_levels_available)[1].tolist() == [1.0, 3.0]
    assert mesh.fingerprint() == Mesh.icosphere(1, num_eigenpairs=4).fingerprint()
    for value in ("0", "-1", "many", "2.5", ""):
        with pytest.raises(
            ConfigurationError,
            match=rf"`eigenpairs` must be a positive integer .*got '{value}'.*\?eigenpairs=5000",
        ):
            make_space(f"graph:{path}?eigenpairs={value}")
    with pytest.raises(ConfigurationError, match=r"space 'graph:.*\?eigenpairs=9': .*between 1 "):
        make_space(f"graph:{path}?eigenpairs=9")  # more than the 8 nodes
    odd = tmp_path / "odd?eigenpairs=2"  # a file named so is read as named
    odd.write_text("0 1\n1 2\n")
    assert make_space(f"graph:{odd}").num_levels_available == 3
