"""Run-length encoding: the program OpenEvolve evolves (tests import it as `solution`)."""

# EVOLVE-BLOCK-START


def encode(text: str) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for ch in text:
        runs.append((ch, 1))
    return runs


def decode(runs: list[tuple[str, int]]) -> str:
    return "".join(ch * count for ch, count in runs)


# EVOLVE-BLOCK-END
