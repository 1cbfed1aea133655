"""The figures, from tables built by hand: what they draw, and what they say of cells without a
valid run (the artists of the returned Figure are inspected, no PNG is read)."""
import numpy as np
import pandas as pd

from e2d_jax import plotting


def _table(cells, seeds=4, instances=(0, 1), invalid=()):
    """A results table: ``cells`` is ``[(agent, {hyperparameter: value})]``; every seed of a cell
    in ``invalid`` (its index) is invalid."""
    names = sorted({k for _, hp in cells for k in hp})
    rows = []
    for i, (agent, hp) in enumerate(cells):
        label = agent + ("[" + ",".join(f"{k}={v:g}" for k, v in sorted(hp.items())) + "]" if hp else "")
        for inst in instances:
            for s in range(seeds):
                row = {"agent": agent, "cell": label, **{f"hp_{k}": hp.get(k, np.nan) for k in names},
                       "instance_seed": inst, "seed": s, "final_regret": 10.0 * (i + 1) + s + inst,
                       "valid": i not in invalid}
                rows.append(row)
    return pd.DataFrame(rows)


def _legend(fig):
    legend = fig.axes[0].get_legend()
    return [] if legend is None else [t.get_text() for t in legend.get_texts()]


def test_hyperparameter_figure_names_grid_values_and_references_without_valid_runs():
    cells = [("etc", {"m": 2.0}), ("etc", {"m": 5.0}), ("etc", {"m": 15.0}), ("ucb", {}), ("ts", {})]
    fig = plotting.plot_hyperparameter(_table(cells, invalid=(1, 4)), "m")
    legend = _legend(fig)
    assert "etc at m=5: no valid seeds" in legend and "ts: no valid seeds" in legend
    assert "etc: median over instances" in legend and "ucb: median over instances" in legend
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "etc: median over instances"]
    np.testing.assert_array_equal(line.get_xdata(), [2.0, 15.0])


def test_figures_of_a_table_without_any_valid_run_say_so():
    table = _table([("etc", {"m": 2.0}), ("etc", {"m": 5.0})], invalid=(0, 1))
    hp = plotting.plot_hyperparameter(table, "m")
    assert _legend(hp) == ["etc at m=2: no valid seeds", "etc at m=5: no valid seeds"]
    assert any("nothing to draw" in t.get_text() for t in hp.axes[0].texts)
    final = plotting.plot_final_distribution(table)
    assert not final.axes[0].patches
    assert [t.get_text() for t in final.axes[0].texts].count("no valid seeds") == 2
    rounds = np.arange(1, 5)
    regret = plotting.plot_regret({"etc[m=2]": (rounds, np.zeros((0, 4)))})
    assert _legend(regret) == ["etc[m=2]: no valid seeds"]
    assert regret.axes[0].get_xlim() == (0.0, 4.0)


def test_every_cell_of_a_grid_has_its_own_colour_and_a_readable_name():
    cells = [("explore_then_commit", {"m": 2.0}), ("explore_then_commit", {"m": 5.0}),
             ("explore_then_commit", {"m": 15.0}), ("ucb", {}), ("ts", {})]
    table = _table(cells)
    names, colours = plotting.cell_names(table), plotting.cell_colours(table)
    assert list(names.values()) == ["explore_then_commit (m=2)", "explore_then_commit (m=5)",
                                    "explore_then_commit (m=15)", "ucb", "ts"]
    assert len(set(colours.values())) == 5
    assert colours["ucb"] == plotting.agent_colour("ucb") and colours["ts"] == plotting.agent_colour("ts")
    final = plotting.plot_final_distribution(table)
    ax = final.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()][::-1] == list(names.values())[::-1]
    assert len({tuple(p.get_facecolor()[:3]) for p in ax.patches}) == 5


def test_figures_show_themselves_in_jupyter_as_png():
    rounds = np.arange(1, 11)
    fig = plotting.plot_regret({"ucb": (rounds, np.cumsum(np.ones((3, 10)), axis=1))})
    png = fig._repr_png_()  # what IPython displays for a cell's value
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
