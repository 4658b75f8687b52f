"""EDGE: extreme class sequences for evaluating class-incremental learning.

Paper: G. Lai, D.-W. Zhou, X. Yang, H.-J. Ye, "The Lie of the Average: How Class
Incremental Learning Evaluation Deceives You?" (the EDGE protocol: Extreme case-based
Distribution & Generalization Evaluation), ICLR 2026 submission,
https://openreview.net/forum?id=19LHXi9uLw; authors' code https://github.com/AIGNLAI/EDGE.
Modules:

- :mod:`clkit.edge.combinatorics` -- |Omega| (Lemma 1), enumeration, RS sampling;
- :mod:`clkit.edge.similarity` -- class similarity from names via a text encoder;
- :mod:`clkit.edge.data_similarity` -- class similarity from data (class-mean features or
  confusions of a model; a random null);
- :mod:`clkit.edge.compare` -- similarity sources compared on the enumerable setting;
- :mod:`clkit.edge.sequences` -- S(O) (Eq. 5), hard / easy sequences (S-ties broken by a canonical
  rule), percentiles;
- :mod:`clkit.edge.estimation` -- Gaussian estimates, JSD / W to the truth, extremes,
  ranking distance, Theorem 1-2 sample sizes, normality tests, correlations;
- :mod:`clkit.edge.learners` -- batched class-incremental learners over many sequences, on any device;
- :mod:`clkit.edge.memory` -- how many sequences they train at once within the device's memory;
- :mod:`clkit.edge.budget` -- the ground truth's work counted and timed before it trains;
- :mod:`clkit.edge.rehearsal` -- the ``paper`` set rehearsed on fabricated files;
- :mod:`clkit.edge.experiment` -- the enumerable experiment on Fashion-MNIST;
- :mod:`clkit.edge.truth` -- its ground truth, exact or a uniform sample with sampling errors;
- :mod:`clkit.edge.triples` -- RS, EDGE and the oracle over every draw (P(EDGE closer));
- :mod:`clkit.edge.structure` -- what S(O) can explain: ties, the eta^2 ceiling, reversal;
- :mod:`clkit.edge.verdicts` -- section 6's verdicts: the paper's claim as the primary family,
  exploratory rows, controls judged alone, pipeline checks;
- :mod:`clkit.edge.tables` -- the paper's Tables 1-2 layout and how its units relate to ours;
- :mod:`clkit.edge.encoders` -- EDGE with CLIP text encoders of different sizes (Fig. 4, Table A4);
- :mod:`clkit.edge.bounds` -- each protocol's min / max accuracy on the classic splits (Fig. 5);
- :mod:`clkit.edge.readback` -- the loop closed: orders trained elsewhere read back into this analysis
  (``clkit edge orders`` / ``clkit edge analyse``).
"""

from .combinatorics import (RS_SEEDS, canonical, check_sequence, enumerate_sequences, log_num_sequences,
                            num_sequences, random_sequences)
from .sequences import (check_similarity, default_granularities, easy_sequence, generalised_scores, hard_sequence,
                        intra_task_scores,
                        inter_task_similarity, random_scores, score_percentile, sequence_score,
                        sequence_scores)
from .data_similarity import DATA_SOURCES, SOURCES, data_class_similarity
from .similarity import (DEFAULT_TEMPLATES, ENCODERS, ClassSimilarity, EncoderUnavailableError,
                         class_similarity, cosine_similarity, encode_texts, prototype_similarity,
                         similarity_agreement)

__all__ = [
    "RS_SEEDS", "canonical", "check_sequence", "enumerate_sequences", "log_num_sequences",
    "num_sequences", "random_sequences",
    "check_similarity", "default_granularities", "easy_sequence", "generalised_scores", "hard_sequence",
    "intra_task_scores",
    "inter_task_similarity", "random_scores", "score_percentile", "sequence_score", "sequence_scores",
    "DEFAULT_TEMPLATES", "ENCODERS", "ClassSimilarity", "EncoderUnavailableError", "class_similarity",
    "cosine_similarity", "encode_texts", "prototype_similarity", "similarity_agreement",
    "DATA_SOURCES", "SOURCES", "data_class_similarity",
]
