# SPDX-License-Identifier: Apache-2.0
"""The checker finds each thing it counts: fed records and rows that hold
exactly one fault each, it counts that fault and nothing else. (A checker
that can never count is no check.)"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
from load import Record  # noqa: E402


def row(state="succeeded", token=10, tenant="t", queue="q", key=None, idem="k1"):
    return {"state": state, "token": token, "tenant": tenant, "queue": queue, "key": key,
            "idem": idem}


class CheckerTest(unittest.TestCase):
    def base(self):
        """One job, submitted, leased, acked: nothing wrong."""
        rec = Record()
        rec.submits.append(("keyed", 1, "k1", "t", "q", None, 0.0))
        rec.grants.append((1, 10, "t", "q", None, 1.0, "w"))
        rec.outcomes.append((1, 10, True, 2.0, {"id": 1, "state": "succeeded"}))
        return rec, {1: row()}

    def counts(self, rec, rows, slots=3):
        return {k: v for k, v in checker.check(rec, rows, slots)[0].items() if v}

    def test_a_clean_run_counts_nothing(self):
        self.assertEqual(self.counts(*self.base()), {})

    def test_lost_and_ids_twice(self):
        rec, rows = self.base()
        rec.submits.append(("keyed", 2, "k2", "t", "q", None, 0.5))  # not in the store
        self.assertEqual(self.counts(rec, rows), {"lost": 1})
        rec, rows = self.base()
        rec.submits.append(("keyed", 1, "k9", "t", "q", None, 0.5))  # another key, the same id
        self.assertEqual(self.counts(rec, rows), {"ids_twice": 1, "lost": 1})
        rec, rows = self.base()
        rows[1] = row(tenant="other")  # the id is there, but as another submit's job
        self.assertEqual(self.counts(rec, rows), {"lost": 1})
        rec, rows = self.base()
        rows[3] = row()
        rec.submits.append(("keyed", 3, "k1", "t", "q", None, 0.5))  # one key, two ids
        self.assertEqual(self.counts(rec, rows), {"lost": 1})

    def test_two_valid_leases_at_once_and_stale_acks(self):
        rec, rows = self.base()
        rec.grants.append((1, 11, "t", "q", None, 1.5, "w2"))  # granted before 10's ack went
        rec.outcomes.append((1, 11, True, 2.5, {"id": 1, "state": "succeeded"}))
        rows[1] = row(token=11)
        got = self.counts(rec, rows)
        self.assertEqual(got, {"double_leases": 1, "stale_acks": 1})
        rec, rows = self.base()
        rows[1] = row(token=12)  # the store finished it under a token no ack had
        self.assertEqual(self.counts(rec, rows), {"stale_acks": 1})

    def test_an_at_most_once_job_handed_out_twice(self):
        rec, rows = self.base()
        rec.submits[0] = ("amo", 1, "k1", "t", "amo", None, 0.0)
        rec.grants[0] = (1, 10, "t", "amo", None, 1.0, "w")
        rec.grants.append((1, 11, "t", "amo", None, 3.0, "w2"))
        rows[1] = row(queue="amo")
        self.assertEqual(self.counts(rec, rows), {"amo_twice": 1})

    def test_lane_order(self):
        rec = Record()
        for jid in (1, 2):
            rec.submits.append(("lanes", jid, "k%d" % jid, "t", "lanes", "a", 0.0))
        rec.grants += [(1, 10, "t", "lanes", "a", 1.0, "w"), (2, 10, "t", "lanes", "a", 1.5, "w")]
        rec.outcomes += [(1, 10, True, 2.0, {}), (2, 10, True, 3.0, {})]
        rows = {1: row(queue="lanes", key="a"), 2: row(queue="lanes", key="a", idem="k2")}
        self.assertEqual(self.counts(rec, rows), {"lane_order": 1})

    def test_slots_exceeded(self):
        rec, rows = Record(), {}
        for jid in range(1, 5):
            rec.submits.append(("slotted", jid, "k%d" % jid, "slotted", "q", None, 0.0))
            rec.grants.append((jid, 10, "slotted", "q", None, 1.0 + jid * 0.1, "w"))
            rec.outcomes.append((jid, 10, True, 5.0, {}))
            rows[jid] = row(tenant="slotted", idem="k%d" % jid)
        self.assertEqual(self.counts(rec, rows, slots=3), {"slots_exceeded": 1})
        self.assertEqual(self.counts(rec, rows, slots=4), {})

    def test_unfinished_and_tokens_twice(self):
        rec, rows = self.base()
        rows[1] = row(state="leased")
        self.assertEqual(self.counts(rec, rows), {"unfinished": 1})
        rec, rows = self.base()
        rec.grants.append((1, 10, "t", "q", None, 1.2, "w2"))
        self.assertEqual(self.counts(rec, rows), {"tokens_twice": 1})

    # -- durable steps ------------------------------------------------------------------------
    def steps_base(self):
        """A steps job whose four steps were stored, and its ack says so."""
        rec = Record()
        rec.steps += [(5, "a", 10, "va", 1.0), (5, "b", 11, "vb", 2.0)]
        steps = [(5, 0, "a", "step", True, "va", None), (5, 1, "nap", "sleep", True, None, None),
                 (5, 2, "b", "step", True, "vb", None), (5, 3, "ev", "event", True, {"n": 5}, None)]
        jobs = [["5", "succeeded", '{"a": "va", "b": "vb", "ev": {"n": 5}}']]
        return rec, steps, jobs

    def step_counts(self, rec, steps, jobs):
        return {k: v for k, v in checker.check_steps(rec, steps, jobs)[0].items() if v}

    def test_clean_steps_count_nothing(self):
        self.assertEqual(self.step_counts(*self.steps_base()), {})
        rec, steps, jobs = self.steps_base()
        steps[3] = (5, 3, "ev", "event", True, None, "timed out")
        jobs[0][2] = '{"a": "va", "b": "vb", "ev": "timed out"}'
        self.assertEqual(self.step_counts(rec, steps, jobs), {})

    def test_steps_lost_twice_and_a_result_that_disagrees(self):
        rec, steps, jobs = self.steps_base()
        steps[0] = (5, 0, "a", "step", True, "other", None)  # a later lease's value
        jobs[0][2] = '{"a": "other", "b": "vb", "ev": {"n": 5}}'
        self.assertEqual(self.step_counts(rec, steps, jobs), {"steps_lost": 1})
        rec, steps, jobs = self.steps_base()
        rec.steps.append((5, "a", 12, "again", 3.0))  # the code ran again, and it counted
        self.assertEqual(self.step_counts(rec, steps, jobs), {"steps_lost": 1, "steps_twice": 1})
        rec, steps, jobs = self.steps_base()
        steps.append((5, 4, "b", "step", True, "vb", None))
        self.assertEqual(self.step_counts(rec, steps, jobs), {"steps_twice": 1})
        rec, steps, jobs = self.steps_base()
        jobs[0][2] = '{"a": "va", "b": "vb", "ev": "timed out"}'
        self.assertEqual(self.step_counts(rec, steps, jobs), {"steps_result": 1})
        rec, steps, jobs = self.steps_base()
        steps[3] = (5, 3, "ev", "event", False, None, None)  # succeeded while it waits?
        self.assertEqual(self.step_counts(rec, steps, jobs), {"steps_result": 1})


if __name__ == "__main__":
    unittest.main(verbosity=2)
