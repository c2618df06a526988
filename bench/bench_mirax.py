"""3DHISTECH MIRAX: a MIRAX slide of 512x512 JPEG camera images (q85, 2x2 images per photo,
photos overlapping by 40 x 32 pixels at jittered positions; tests/data/mirax.py, generated once into
bench/data), tilewise against OpenSlide 4.0.1, each tool in its own process:

- opening the slide (Slidedat.ini, the index, the camera positions): the median of --opens opens;
- random 256x256 level-0 patches, caches off, 1 thread and one per core (peak RSS beside each), with the
  bound of a reader that decodes every camera image a patch touches whole (libjpeg-turbo, from memory, on
  images of the same content and encoder; the images per patch counted over the same locations).

    bench_mirax.py [--patches N] [--reps R] [--opens K] [--quick]"""

from __future__ import annotations

import os
import sys

import numpy as np

from common import DATA, REPO, Table, child_row, jpeg_ceiling, open_and_patch_args, publish, slidegen

sys.path.insert(0, str(REPO / "tests" / "data"))
import mirax  # noqa: E402


def mirax_slide(size: int) -> "os.PathLike":
    folder = DATA / f"mirax_{size}"
    path = folder / "slide.mrxs"
    if not (folder / ".complete").exists():
        print(f"generating {folder.name} ...", flush=True)
        folder.mkdir(parents=True, exist_ok=True)
        block = slidegen.ihc_tissue(min(size, 4096), min(size, 4096), seed=5)
        world = np.tile(block, (size // block.shape[0] + 1, size // block.shape[1] + 1, 1))[:size, :size]
        mirax.write_mirax(path, np.ascontiguousarray(world), tile=512, divisions=2, overlap=(40, 32), levels=4,
                          fmt="JPEG", jitter=2, data_files=4, tint=0)
        (folder / ".complete").write_text("")
    return path


def main() -> None:
    args = open_and_patch_args()
    size = 4096 if args.quick else 16384
    path = mirax_slide(size)
    ncores = os.cpu_count() or 1
    import tilewise

    slide = tilewise.open(path)
    rng = np.random.default_rng(0)  # the locations random_patch_rates draws
    w0, h0 = slide.dimensions
    locs = [(int(rng.integers(0, w0 - 256)), int(rng.integers(0, h0 - 256))) for _ in range(args.patches)]
    per_patch = float(np.mean([len(slide.stored_area(0, loc, (256, 256))) for loc in locs]))
    world = slidegen.ihc_tissue(2048, 2048, seed=5)
    images = [mirax.encode(np.ascontiguousarray(world[y:y + 512, x:x + 512]), "JPEG")
              for y in range(0, 2048, 512) for x in range(0, 2048, 512)]
    table = Table(f"CPU, {ncores} cores: MIRAX, {size}x{size} of 512x512 JPEG camera images (q85, 2x2 per photo, "
                  "overlapping photos), each tool in its own process")
    for tool in ("tilewise", "OpenSlide"):
        child_row(table, "open the slide", tool,
                  [sys.executable, __file__, "--child", "open", tool.lower(), str(path), "1", str(args.opens)],
                  unit="opens/s")
    for threads in (1, ncores):
        name = f"random 256x256 patches, caches off, {threads} thread{'s' if threads > 1 else ''}"
        for tool in ("tilewise", "OpenSlide"):
            child_row(table, name, tool, [sys.executable, __file__, "--reps", str(args.reps), "--child", "patches",
                                          tool.lower(), str(path), str(threads), str(args.patches)])
        c = jpeg_ceiling(images, threads=threads, reps=3)
        table.add(name, f"libjpeg-turbo, {per_patch:.2f} whole images per patch", c["mpix_per_s"] * 1e6 / (512 * 512) / per_patch,
                  float("nan"), float("nan"), "patches/s", "from memory: the bound of a whole-image reader such as OpenSlide")
    publish(table, "mirax.md")


if __name__ == "__main__":
    main()
