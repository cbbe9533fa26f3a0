"""The campaign database: WAL mode, round trips, one evaluation per (genome, problem), atomic
transactions, read-only access while a campaign writes."""

from __future__ import annotations

import random
import sqlite3
import time

import pytest

from evaluator.api import STATUS_OK, STATUS_WRONG, BaselineSet, Measurement, Timing
from evolution.db import SCHEMA_VERSION, CampaignDB
from templates import get_space


def _genome(seed=0):
    return get_space("sm90_cutlass").sample(random.Random(seed))


def test_wal_mode_and_tables(tmp_path):
    db = CampaignDB(tmp_path / "campaign.db")
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "sessions", "shapes", "genomes", "proposals", "evaluations", "baselines", "policy_log",
            "events"} <= tables
    assert not db.initialised()
    db.initialise({"name": "x"}, ["1024x1024x1024", "8x8x8"], {"seed": 3})
    assert db.initialised() and db.get_meta("seed") == 3 and db.get_meta("schema_version") == SCHEMA_VERSION
    assert [r["problem"] for r in db.shape_rows()] == ["1024x1024x1024", "8x8x8"]
    db.close()


def test_proposals_evaluations_baselines_round_trip(tmp_path):
    db = CampaignDB(tmp_path / "campaign.db")
    db.initialise({"name": "x"}, ["1024x1024x1024"], {})
    db.start_session("run")
    g = _genome()
    db.record_proposals([{"seq": 0, "problem": "1024x1024x1024", "round": 0, "island": 1, "genome": g,
                          "operator": "param_mutate", "arm": "param_mutate", "parent_ids": ["a", "b"],
                          "note": "n", "meta": {"prompt_id": "p1", "response_id": "r1", "tokens": 12}}])
    p = db.proposal(0)
    assert (p["genome_id"], p["parent_ids"], p["prompt_id"], p["response_id"], p["tokens"]) == (g.id, ["a", "b"],
                                                                                                "p1", "r1", 12)
    assert db.genome(g.id) == g and db.tokens_used() == 12 and db.max_seq() == 0
    m = Measurement(g.id, "1024x1024x1024", STATUS_OK, device=Timing(5.0, 4.9, 5.2, 7), server=Timing(6, 6, 6, 3),
                    rel_error=2e-4, simulated=True, build_seconds=40.0, gpu_seconds=0.5, build_key="bk")
    db.record_evaluation(m, seconds=1.5, seq=0, shape_wall=2.0)
    back = db.measurement(g.id, "1024x1024x1024")
    assert back.to_dict() == m.to_dict()
    assert db.shape_row("1024x1024x1024")["wall_seconds"] == 2.0
    row = db.evaluation_rows("1024x1024x1024")[0]
    assert row["seconds"] == 1.5 and row["seq"] == 0 and row["session"] == db.session and row["simulated"] == 1
    bs = BaselineSet("1024x1024x1024", device={"torch_tn": Timing(6, 6, 6, 5), "cublaslt": Timing(5.5, 5, 6, 5)},
                     simulated=True)
    db.record_baselines(bs)
    assert db.baselines("1024x1024x1024").to_dict() == bs.to_dict()
    assert db.best("1024x1024x1024")[0][0] == g
    db.log_policy("1024x1024x1024", 0, 1, "thompson", {"a": 1.0}, {"a": {}}, {"s": 1})
    db.log_policy("1024x1024x1024", 0, 1, "thompson", {"a": 0.5}, {}, {})   # a replayed round: ignored
    assert [r["probabilities"] for r in db.policy_log()] == [{"a": 1.0}]
    db.close()


def test_a_genome_is_measured_once_per_problem(tmp_path):
    db = CampaignDB(tmp_path / "campaign.db")
    db.initialise({"name": "x"}, ["1024x1024x1024", "2048x2048x2048"], {})
    g = _genome()
    db.record_proposals([{"seq": 0, "problem": "1024x1024x1024", "round": 0, "genome": g, "operator": "x"}])
    db.record_evaluation(Measurement(g.id, "1024x1024x1024", STATUS_WRONG, reason="bad"))
    with pytest.raises(sqlite3.IntegrityError):
        db.record_evaluation(Measurement(g.id, "1024x1024x1024", STATUS_OK, device=Timing(1, 1, 1, 1)))
    db.record_evaluation(Measurement(g.id, "2048x2048x2048", STATUS_OK, device=Timing(1, 1, 1, 1)))  # another shape
    assert db.evaluation_count() == 2 and db.status_counts("1024x1024x1024") == {STATUS_WRONG: 1}
    # the failed insert rolled back completely (its transaction also updated nothing else)
    assert db.measurement(g.id, "1024x1024x1024").status == STATUS_WRONG
    db.close()


def test_transactions_are_atomic(tmp_path):
    db = CampaignDB(tmp_path / "campaign.db")
    db.initialise({"name": "x"}, ["1024x1024x1024"], {})
    a, b = _genome(1), _genome(2)
    rows = [{"seq": 0, "problem": "1024x1024x1024", "round": 0, "genome": a, "operator": "x"},
            {"seq": 0, "problem": "1024x1024x1024", "round": 0, "genome": b, "operator": "x"}]  # seq clash
    with pytest.raises(sqlite3.IntegrityError):
        db.record_proposals(rows)
    assert db.proposals() == [] and db.genome(a.id) is None
    db.close()


def test_sessions_measure_wall_time_and_readers_see_commits(tmp_path):
    db = CampaignDB(tmp_path / "campaign.db")
    db.initialise({"name": "x"}, ["1024x1024x1024"], {})
    db.start_session("run")
    time.sleep(0.05)
    db.heartbeat()
    first = db.wall_seconds()
    assert 0.04 < first < 5
    db.start_session("resume")
    assert db.wall_seconds() == pytest.approx(first, abs=0.01)
    reader = CampaignDB(tmp_path / "campaign.db", readonly=True)
    g = _genome()
    db.record_proposals([{"seq": 0, "problem": "1024x1024x1024", "round": 0, "genome": g, "operator": "x"}])
    db.record_evaluation(Measurement(g.id, "1024x1024x1024", STATUS_OK, device=Timing(1, 1, 1, 1)))
    assert reader.evaluation_count() == 1
    with pytest.raises(sqlite3.OperationalError):
        reader.conn.execute("DELETE FROM evaluations")
    reader.close()
    db.event("note", None, {"k": 1})
    assert db.events("note")[0]["data"] == {"k": 1}
    assert [s["mode"] for s in db.sessions()] == ["run", "resume"]
    db.close()


def test_best_standing_quotes_confirming_measurements(tmp_path):
    """The campaign's search-time best is what its hall of fame holds: a genome that timed 3.3 us once
    and 6.2 us when confirmed (seen on the H200 at 64x64x4096) is quoted at 6.2, a failed
    confirmation drops its genome, and a genome never confirmed (not among a round's entrants) is
    not quoted at its single search time, however fast; without confirmations, the search times."""
    from experiments.report import campaign_status
    shape = "64x64x4096"
    db = CampaignDB(tmp_path / "campaign.db")
    db.initialise({"name": "x"}, [shape], {})
    db.start_session("run")
    lucky, steady, wrong, never = (_genome(s) for s in (1, 2, 3, 4))
    assert len({g.id for g in (lucky, steady, wrong, never)}) == 4
    db.record_proposals([{"seq": i, "problem": shape, "round": 0, "island": 0, "genome": g, "operator": "o",
                          "arm": "o", "parent_ids": []} for i, g in enumerate((lucky, steady, wrong, never))])

    def m(g, us, status=STATUS_OK):
        return Measurement(g.id, shape, status, device=Timing(us, us, us, 5), rel_error=2e-4)

    # `never` was the fifth candidate of a round whose hall of fame holds four: never confirmed
    for g, us in ((lucky, 3.3), (steady, 4.4), (wrong, 2.0), (never, 3.4)):
        db.record_evaluation(m(g, us))
    db.record_baselines(BaselineSet(shape, device={"cublaslt": Timing(7.2, 7.2, 7.2, 5)}))
    assert db.best(shape)[0][0] == wrong                     # the raw minimum of the search
    genome, best, confirmed = db.best_standing(shape)         # no confirmations yet: the search times
    assert (genome, best.time_us, confirmed) == (wrong, 2.0, False)
    db.record_confirmation(m(wrong, 2.1, STATUS_WRONG))       # refused when measured again
    db.record_confirmation(m(lucky, 6.2))
    db.record_confirmation(m(steady, 4.38))
    genome, best, confirmed = db.best_standing(shape)
    assert (genome, best.time_us, confirmed) == (steady, 4.38, True)
    entry = campaign_status(db)["shapes"][0]
    assert entry["best"]["genome_id"] == steady.id and entry["best"]["confirmed"] is True
    assert entry["speedup"] == pytest.approx(7.2 / 4.38)
    db.record_confirmation(m(steady, 12.0))                   # measured again, slower: lucky at 6.2 leads
    genome, best, confirmed = db.best_standing(shape)
    assert (genome, best.time_us, confirmed) == (lucky, 6.2, True)
    db.record_confirmation(m(lucky, 1.0, STATUS_WRONG))
    db.record_confirmation(m(steady, 1.0, STATUS_WRONG))      # every confirmation refused: nothing stands
    assert db.best_standing(shape) is None
    assert db.best_standing("1x1x1") is None
    db.close()
