"""clkit.edge combinatorics and sequences: Lemma 1, enumeration, RS, S(O), hard/easy sequences."""

import math

import numpy as np
import pytest

from clkit import edge
from clkit.edge.sequences import _best_order, _clusters, _local_search, _local_search_dense, _path_cost


def unit_sim(n, d=5, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X @ X.T


# ----------------------------------------------------------------- Lemma 1 and enumeration

@pytest.mark.parametrize("n,k,count", [(4, 2, 6), (6, 2, 20), (8, 2, 70), (10, 2, 252), (6, 3, 90),
                                       (9, 3, 1680), (8, 4, 2520)])
def test_num_sequences_matches_table_a2(n, k, count):
    assert edge.num_sequences(n, k) == count


def test_num_sequences_exact_for_large_settings():
    om = edge.num_sequences(100, 10)
    assert om == math.factorial(100) // math.factorial(10) ** 10
    assert 10**92 < om < 10**93                  # "approximately 10^92" (Lemma 1's example)
    assert edge.log_num_sequences(100, 10) == pytest.approx(math.log(om))
    assert isinstance(edge.num_sequences(1000, 10), int)


@pytest.mark.parametrize("n,k", [(4, 2), (6, 3), (9, 3), (8, 4)])
def test_enumeration_is_every_ordered_equal_partition_once(n, k):
    seqs = edge.enumerate_sequences(n, k)
    assert seqs.shape == (edge.num_sequences(n, k), k, n // k)
    assert len({s.tobytes() for s in seqs}) == len(seqs)
    assert (np.sort(seqs.reshape(len(seqs), -1), axis=1) == np.arange(n)).all()
    assert (np.diff(seqs, axis=2) > 0).all()          # canonical: ascending within a task


def test_enumeration_refuses_what_does_not_fit():
    with pytest.raises(ValueError, match="num_classes=100, num_tasks=10.*max_bytes"):
        edge.enumerate_sequences(100, 10)


def test_random_sequences_follow_pycil_seeding_without_global_state():
    state = np.random.get_state()[1].copy()
    seqs = edge.random_sequences(6, 3, seeds=(0, 42, 1993))
    assert (np.random.get_state()[1] == state).all()
    for s, seq in zip((0, 42, 1993), seqs):
        order = np.random.RandomState(s).permutation(6)
        assert seq.tolist() == np.sort(order.reshape(3, 2), axis=1).tolist()
    assert (edge.random_sequences(6, 3) == seqs).all()   # the RS default seeds


@pytest.mark.parametrize("n,k,match", [(10, 3, "num_tasks must divide"), (6, 1, "num_tasks must be an integer >= 2"),
                                       (6, 6.0, "num_tasks must be an integer")])
def test_bad_task_counts_are_refused(n, k, match):
    with pytest.raises((ValueError, TypeError), match=match):
        edge.num_sequences(n, k)


# ----------------------------------------------------------------- S(O)

def test_sequence_score_hand_computed():
    sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    # K/((K-1)N) = 2/4; adjacent pairs between {0,1} and {2,3}
    assert edge.sequence_score(sim, [[0, 1], [2, 3]]) == pytest.approx(0.5 * (.1 + .2 + .3 + .4))
    # 3 tasks of size 2 from 6 classes: coefficient 3/(2*6)
    sim6 = np.eye(6)
    sim6[0, 2] = sim6[2, 0] = 0.5
    sim6[3, 5] = sim6[5, 3] = 0.7
    assert edge.sequence_score(sim6, [[0, 1], [2, 3], [4, 5]]) == pytest.approx(0.25 * (0.5 + 0.7))
    assert edge.sequence_score(sim6, [[0, 1], [4, 5], [2, 3]]) == pytest.approx(0.25 * 0.7)


def test_sequence_score_invariances_and_batch_agreement():
    sim = unit_sim(9)
    seqs = edge.enumerate_sequences(9, 3)
    S = edge.sequence_scores(sim, seqs)
    for i in (0, 17, 1000):
        seq = seqs[i]
        assert S[i] == pytest.approx(edge.sequence_score(sim, seq.tolist()))
        assert S[i] == pytest.approx(edge.sequence_score(sim, seq[::-1]))          # reversed order
        assert S[i] == pytest.approx(edge.sequence_score(sim, seq[:, ::-1]))       # order inside tasks
    # E[S] over all sequences = M * mean off-diagonal similarity (Eq. 38 with X summed)
    off = sim[~np.eye(9, dtype=bool)].mean()
    assert S.mean() == pytest.approx(3 * off)


def test_inter_task_similarity_is_mean_block():
    sim = unit_sim(6)
    its = edge.inter_task_similarity(sim, [[0, 1], [2, 3], [4, 5]])
    assert its[0, 2] == pytest.approx(sim[np.ix_([0, 1], [4, 5])].mean())
    assert np.allclose(its, its.T)


# ----------------------------------------------------------------- hard / easy

@pytest.mark.parametrize("n,k", [(6, 3), (9, 3), (8, 4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_spaces_give_the_exact_extremes(n, k, seed):
    sim = unit_sim(n, seed=seed)
    S = edge.sequence_scores(sim, edge.enumerate_sequences(n, k))
    hard, hi = edge.hard_sequence(sim, k, return_info=True)
    easy, ei = edge.easy_sequence(sim, k, return_info=True)
    assert hi["method"] == ei["method"] == "exhaustive"
    assert hi["score"] == pytest.approx(S.min()) and ei["score"] == pytest.approx(S.max())
    assert hi["paper_score"] >= S.min() and ei["paper_score"] <= S.max()
    assert edge.sequence_score(sim, hard) == pytest.approx(hi["score"])


@pytest.mark.parametrize("n,k", [(6, 3), (9, 3), (8, 4), (12, 4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_local_search_improves_the_paper_candidate_towards_the_optimum(n, k, seed):
    sim = unit_sim(n, seed=seed)
    S = edge.sequence_scores(sim, edge.enumerate_sequences(n, k))
    _, hi = edge.hard_sequence(sim, k, exact_limit=0, return_info=True)
    _, ei = edge.easy_sequence(sim, k, exact_limit=0, return_info=True)
    assert hi["method"] == "local search"
    # never worse than the paper's algorithm, and within the best 2 % of all sequences
    assert hi["score"] <= hi["paper_score"] + 1e-12 and ei["score"] >= ei["paper_score"] - 1e-12
    assert (S < hi["score"] - 1e-12).mean() <= 0.02 and (S > ei["score"] + 1e-12).mean() <= 0.02


def _all_swaps(seq):
    """Every sequence one class swap (between two tasks) away from seq."""
    k, m = seq.shape
    out = []
    for p in range(k):
        for q in range(p + 1, k):
            for i in range(m):
                for j in range(m):
                    s = seq.copy()
                    s[p, i], s[q, j] = seq[q, j], seq[p, i]
                    out.append(s)
    return np.array(out)


@pytest.mark.parametrize("n,k", [(8, 4), (12, 3), (12, 4), (15, 5), (16, 4)])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("sign", [1, -1])
def test_incremental_search_stops_where_a_brute_force_pass_finds_nothing(n, k, seed, sign):
    # At convergence no single swap (rescored from scratch with Eq. 5) and no task order
    # (all K! orders) improves S; the result is never worse than its start.
    import itertools

    sim = unit_sim(n, seed=seed)
    start = edge.random_sequences(n, k, seeds=[seed])[0]
    res = _local_search(sign * sim, start, multi=bool(seed))
    assert sorted(res.ravel().tolist()) == list(range(n))
    s_res = edge.sequence_score(sim, res)
    assert sign * s_res <= sign * edge.sequence_score(sim, start) + 1e-12
    assert (sign * edge.sequence_scores(sim, _all_swaps(res)) >= sign * s_res - 1e-9).all()
    if k <= 5:
        orders = np.array([res[list(p)] for p in itertools.permutations(range(k))])
        assert (sign * edge.sequence_scores(sim, orders) >= sign * s_res - 1e-9).all()


def test_first_swap_of_the_search_is_the_best_single_swap():
    # One round of the vectorised gains picks the swap a brute-force rescoring ranks best.
    sim = unit_sim(12, seed=5)
    start = edge.random_sequences(12, 4, seeds=[1])[0]
    one = _local_search(sim, start, max_rounds=1)
    swaps = _all_swaps(start)
    S = edge.sequence_scores(sim, swaps)
    assert edge.sequence_score(sim, one) == pytest.approx(S.min())
    # a multi-swap round gains at least as much as the single best swap
    multi = _local_search(sim, start, max_rounds=1, multi=True)
    assert edge.sequence_score(sim, multi) <= S.min() + 1e-12


def test_intra_task_score_hand_computed_and_generalised_default_is_the_paper():
    sim = np.array([[1, .9, .1, .2], [.9, 1, .3, .4], [.1, .3, 1, .8], [.2, .4, .8, 1]])
    seqs = [[[0, 1], [2, 3]], [[0, 2], [1, 3]]]
    assert edge.intra_task_scores(sim, seqs).tolist() == pytest.approx([(0.9 + 0.8) / 2, (0.1 + 0.4) / 2])
    assert edge.generalised_scores(sim, seqs).tolist() == pytest.approx(edge.sequence_scores(sim, seqs).tolist())
    assert edge.generalised_scores(sim, seqs, 2.0).tolist() == pytest.approx([0.5 + 1.7, 1.1 + 0.5])
    with pytest.raises((TypeError, ValueError), match="intra_weight"):
        edge.generalised_scores(sim, seqs, "big")


@pytest.mark.parametrize("w", [-1.0, 0.7])
@pytest.mark.parametrize("sign", [1, -1])
def test_dense_search_with_intra_term_reaches_a_brute_force_local_optimum(w, sign):
    import itertools

    n, k = 12, 4
    sim = unit_sim(n, seed=7)
    start = edge.random_sequences(n, k, seeds=[3])[0]
    T = (np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]) == 1).astype(float)
    np.fill_diagonal(T, w * 2 * (k - 1) / k)
    one = _local_search_dense(sign * sim, start, T, max_rounds=1)      # the best single swap
    swaps = _all_swaps(start)
    G = edge.generalised_scores(sim, swaps, w)
    assert sign * edge.generalised_scores(sim, one[None], w)[0] == pytest.approx((sign * G).min())
    res = _local_search_dense(sign * sim, start, T)
    g = sign * edge.generalised_scores(sim, res[None], w)[0]
    assert (sign * edge.generalised_scores(sim, _all_swaps(res), w) >= g - 1e-9).all()
    orders = np.array([res[list(p)] for p in itertools.permutations(range(k))])
    assert (sign * edge.generalised_scores(sim, orders, w) >= g - 1e-9).all()


@pytest.mark.parametrize("w", [-1.0, 1.0])
def test_hard_easy_with_intra_weight_are_exact_on_small_spaces_and_improve_on_large(w):
    sim = unit_sim(9, seed=1)
    allseq = edge.enumerate_sequences(9, 3)
    G = edge.generalised_scores(sim, allseq, w)
    _, hi = edge.hard_sequence(sim, 3, intra_weight=w, return_info=True)
    _, ei = edge.easy_sequence(sim, 3, intra_weight=w, return_info=True)
    assert hi["objective"] == pytest.approx(G.min()) and ei["objective"] == pytest.approx(G.max())
    sim = unit_sim(40, d=8, seed=2)
    h, hi = edge.hard_sequence(sim, 5, intra_weight=w, return_info=True)
    paper = np.array(hi["paper_sequence"])
    assert hi["objective"] <= edge.generalised_scores(sim, paper[None], w)[0] + 1e-12
    r = edge.generalised_scores(sim, edge.random_sequences(40, 5, seeds=list(range(300))), w)
    assert hi["objective"] < r.min()


def test_one_pass_clusters_match_scipy_fcluster():
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    sim = unit_sim(30, seed=2)
    dis = np.maximum(1 - sim, 0)
    np.fill_diagonal(dis, 0)
    Z = linkage(squareform(dis, checks=False), method="average")
    got = _clusters(sim, [2, 5, 10, 30])
    for g, clusters in got.items():
        assert len(clusters) == g and sorted(sum(clusters, [])) == list(range(30))
        lab = fcluster(Z, t=g, criterion="maxclust")
        assert sorted(map(sorted, clusters)) == sorted(
            sorted(np.nonzero(lab == v)[0].tolist()) for v in np.unique(lab))


def test_paper_algorithm_alone_is_available():
    sim = unit_sim(12, seed=3)
    seq, info = edge.hard_sequence(sim, 4, improve=False, return_info=True)
    assert edge.sequence_score(sim, seq) == pytest.approx(info["paper_score"])
    assert seq.tolist() == info["paper_sequence"]


def test_planted_clusters_never_meet_in_hard_neighbours():
    # 4 tight clusters of 3 classes. S only counts adjacent tasks, so the hard sequence
    # must never put two classes of one cluster in adjacent tasks.
    labels = np.repeat(np.arange(4), 3)
    rng = np.random.default_rng(0)
    sim = np.where(labels[:, None] == labels[None, :], 0.9, 0.1) + 0.01 * rng.random((12, 12))
    sim = (sim + sim.T) / 2
    np.fill_diagonal(sim, 1.0)
    perm = rng.permutation(12)                      # hide the structure behind a relabelling
    sim = sim[np.ix_(perm, perm)]
    labels = labels[perm]
    hard = edge.hard_sequence(sim, 4)
    assert all(not set(labels[a]) & set(labels[b]) for a, b in zip(hard[:-1], hard[1:]))
    easy = edge.easy_sequence(sim, 4)
    assert edge.sequence_score(sim, easy) >= edge.random_scores(sim, 4, num_random=2000).max()
    assert edge.sequence_score(sim, easy) > edge.sequence_score(sim, np.sort(np.argsort(labels).reshape(4, 3)))


def test_large_settings_land_in_the_tails_of_random_sequences():
    sim = unit_sim(100, d=20, seed=4)
    hard, hi = edge.hard_sequence(sim, 10, return_info=True)
    easy, ei = edge.easy_sequence(sim, 10, return_info=True)
    r = edge.random_scores(sim, 10, num_random=5000, seed=0)
    assert hi["score"] < r.min() and ei["score"] > r.max()
    assert edge.score_percentile(sim, hard, num_random=5000) == 0.0
    assert edge.score_percentile(sim, easy, num_random=5000) == 100.0
    assert hi["score"] < hi["paper_score"] and ei["score"] > ei["paper_score"]


def test_exact_task_order_matches_brute_force():
    import itertools

    rng = np.random.default_rng(0)
    for k in (4, 5, 7):
        Y = rng.random((k, k))
        Y = Y + Y.T
        best = min(_path_cost(Y, p) for p in itertools.permutations(range(k)))
        assert _path_cost(Y, _best_order(Y, list(range(k)))) == pytest.approx(best)


def test_generators_are_deterministic():
    sim = unit_sim(20, seed=5)
    assert (edge.hard_sequence(sim, 4) == edge.hard_sequence(sim, 4)).all()
    assert edge.score_percentile(sim, edge.easy_sequence(sim, 4), seed=3) == \
        edge.score_percentile(sim, edge.easy_sequence(sim, 4), seed=3)


# ----------------------------------------------------------------- bad input

def test_bad_similarity_and_sequences_are_refused():
    sim = unit_sim(6)
    asym = sim.copy()
    asym[0, 1] += 0.2
    with pytest.raises(ValueError, match="sim must be symmetric"):
        edge.hard_sequence(asym, 3)
    nan = sim.copy()
    nan[1, 2] = nan[2, 1] = np.nan
    with pytest.raises(ValueError, match="sim must contain only finite values"):
        edge.easy_sequence(nan, 3)
    with pytest.raises(ValueError, match="sim must be a square"):
        edge.hard_sequence(sim[:, :4], 2)
    with pytest.raises(ValueError, match="num_tasks must divide"):
        edge.hard_sequence(sim, 4)
    with pytest.raises(ValueError, match="num_tasks must be an integer >= 2"):
        edge.easy_sequence(sim, 1)
    with pytest.raises(ValueError, match="sequence must use every class index"):
        edge.sequence_score(sim, [[0, 1], [2, 3], [4, 4]])
    with pytest.raises(ValueError, match="sequence must have at least 2 tasks"):
        edge.sequence_score(sim, [[0, 1, 2, 3, 4, 5]])
    with pytest.raises(ValueError, match="granularities"):
        edge.hard_sequence(sim, 3, granularities=[0])
