"""The trusted reference solution: used to collect the expected tests."""


def encode(text: str) -> list[tuple[str, int]]:
    runs: list[tuple[str, int]] = []
    for ch in text:
        if runs and runs[-1][0] == ch:
            runs[-1] = (ch, runs[-1][1] + 1)
        else:
            runs.append((ch, 1))
    return runs


def decode(runs: list[tuple[str, int]]) -> str:
    if any(count < 0 for _, count in runs):
        raise ValueError("negative run length")
    return "".join(ch * count for ch, count in runs)
