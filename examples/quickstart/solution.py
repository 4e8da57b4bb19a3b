"""A small candidate program: run-length encoding (with one deliberate weakness)."""


def encode(text: str) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for ch in text:
        if runs and runs[-1][0] == ch:
            runs[-1] = (ch, runs[-1][1] + 1)
        else:
            runs.append((ch, 1))
    return runs


def decode(runs: list[tuple[str, int]]) -> str:
    # Weakness: a negative count should be rejected, not silently treated as zero.
    return "".join(ch * count for ch, count in runs)
