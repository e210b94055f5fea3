"""Experiment: can a small CNN read ONE die crop better than the classical reader, never confidently wrong?

    nice -n 19 python bench/dice_cnn.py                       # both data sets, both folds (about 15 minutes)
    nice -n 19 python bench/dice_cnn.py --datasets matteop65  # one data set
    nice -n 19 python bench/dice_cnn.py --members 4           # an ensemble of 4 per fold (4x as long)
    python bench/dice_cnn.py --help

The setting is "one die (crop)" of `bench/dice_accuracy.py`, measured the same way: the same data, the same
two folds (`split`), the same corrected labels (`apply_errata`), the same crops (`crop_around` around each
labelled die, `die_side` with the fixed side of matteop65 = the median die side of the calibration half), the
same scoring (`Tally`: per die correct / WRONG / unreadable, per image all right / any wrong / abstained,
against corrected and published labels). Those functions are imported from `dice_accuracy.py`.

For each data set and fold, on the calibration half ONLY:
- the calibration half is split again (grouped like `split`: whole blocks of matteop65 frames) into an inner
  training part (about 3/4) and an inner validation part (about 1/4);
- a small CNN (5 conv layers, global average pooling, < 200k parameters) is trained on the inner training
  part with augmentation (any rotation, mirror, small shift and scale, brightness / contrast / colour, channel
  order, blur, noise);
- it is exported to ONNX and from then on run only through OpenCV's DNN module (`cv2.dnn`, one thread), as the
  product would run it: no torch at run time;
- the least top-class probability that is read is chosen on the inner validation part: the top probability of
  the most confident WRONG answer there (at least 0.5), with its remaining doubt halved as a margin
  (threshold = 1 - (1 - p_wrong) / 2).
The test half is then read once with that model and threshold; nothing is chosen from it.

`--members 4` (an ensemble): the calibration half is cut into its 4 parts; model k is trained on every part
but k; the threshold is chosen the same way from every calibration die, each read by the model that did not
train on it; the test half is read by the 4 models together (softmax averaged). 4 times the training and the
reading time.

The model input: the crop is padded to a square around the die's centre where the image's edge cut it,
resized to 96x96 px (3 die sides), and its central 64x64 px (2 die sides) is the input. A reading averages the
softmax over the 8 rotations by 90 degrees and mirrors of that input (a die face reads the same in all).

torch is needed ONLY to train (`pip install -e '.[train]'`); reading uses OpenCV and numpy. The ONNX file is
written by a small protobuf writer here (the `onnx` package is not a dependency). Writes
`bench/results/dice-cnn.json` (`--output` to change the stem) and prints a markdown table in the
shape of `bench/DICE.md`'s. The ONNX models go to `--models` (default: a temporary folder; not kept).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
import cv2
import numpy as np
from dice_accuracy import (
    DATASETS,
    ERRATA,
    MATTEOP_BLOCK,
    Tally,
    add_data_arguments,
    confidence_bin,
    crop_around,
    dataset_commits,
    die_side,
    image_kind,
    kind,
    load_photos,
    machine_line,
    merge,
    tally_header,
    tally_row,
)

from calibration.dice import LabelledImage

BASE = 96  # the crop (3 die sides) resized to BASE x BASE
INPUT = 64  # the central INPUT x INPUT of it (2 die sides) is the model's input
CHANNELS = (16, 32, 64, 96, 96)
SEED = 20261201


@dataclass(frozen=True)
class Settings:
    steps: int = 1200
    batch: int = 64
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    inner_validation: str = "about 1/4 of the calibration half (grouped as split)"
    least_threshold: float = 0.5
    tta: int = 8
    members: int = 1  # 1: one model; 4: an ensemble of 4, threshold from every calibration die


# --- crops --------------------------------------------------------------------------------------------


def fixed_side_of(calibration: list[LabelledImage]) -> float:
    """matteop65's one crop side, as `dice_accuracy.run_dataset` computes it: the median die side of the
    calibration half (dice whose box tells their side)."""
    sides = [side for side in (die.die_side() for e in calibration for die in e.dice) if side is not None]
    return float(np.median(sides))


def base_crop(image: np.ndarray, centre: tuple[float, float], side: float) -> np.ndarray:
    """`crop_around` as `measure_crops` cuts it, padded back to a square around the centre where the image's
    edge cut it, resized to BASE x BASE."""
    crop, (cx, cy) = crop_around(image, centre, side)
    half = 1.5 * side  # CROP_SIDES / 2 die sides
    height, width = crop.shape[:2]
    top, left = max(0, round(half - cy)), max(0, round(half - cx))
    bottom, right = max(0, round(half - (height - cy))), max(0, round(half - (width - cx)))
    if top or left or bottom or right:
        crop = cv2.copyMakeBorder(crop, top, bottom, left, right, cv2.BORDER_REPLICATE)
    return cv2.resize(crop, (BASE, BASE), interpolation=cv2.INTER_AREA)


@dataclass
class Crops:
    pixels: np.ndarray  # N x BASE x BASE x 3 uint8
    values: np.ndarray  # N, corrected labels 1-6
    published: np.ndarray  # N, published labels 1-6
    image: list[str]  # file name of each crop's image
    line: list[int]  # label line (1-based)


def build_crops(
    examples: list[LabelledImage], published: dict[str, LabelledImage], fixed_side: float
) -> Crops:
    pixels, values, pub, names, lines = [], [], [], [], []
    for example in examples:
        image = example.load()
        for index, die in enumerate(example.dice):
            pixels.append(base_crop(image, die.centre, die_side(die, fixed_side)))
            values.append(die.value)
            pub.append(published[example.name].dice[index].value)
            names.append(example.name)
            lines.append(index + 1)
    return Crops(np.stack(pixels), np.array(values), np.array(pub), names, lines)


def group_key(dataset: str, name: str) -> str:
    """What `split` keeps together: a matteop65 block of MATTEOP_BLOCK consecutive frames, a byler image."""
    found = re.fullmatch(r"(.*)_(\d+)\.jpe?g", name) if dataset == "matteop65" else None
    return f"{found.group(1)}:{int(found.group(2)) // MATTEOP_BLOCK}" if found else name


def inner_parts(dataset: str, calibration: list[LabelledImage], count: int = 4) -> list[list[LabelledImage]]:
    """The calibration half in `count` parts, grouped as `split` groups (whole blocks of matteop65 frames):
    the groups in the order of a hash of their key, dealt round. The hash is sha256, not split's crc32: a
    crc32's parity is linear in the bits of its input, so inside one half of `split` every key would fall on
    the same side."""
    groups = sorted(
        {group_key(dataset, e.name) for e in calibration},
        key=lambda key: hashlib.sha256(f"inner:{key}".encode()).hexdigest(),
    )
    part_of = {key: index % count for index, key in enumerate(groups)}
    return [[e for e in calibration if part_of[group_key(dataset, e.name)] == part] for part in range(count)]


# --- augmentation and input -----------------------------------------------------------------------------


def augment(base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random view of a BASE crop, INPUT x INPUT, float32 0-255."""
    if rng.random() < 0.5:
        base = base[:, ::-1]
    angle = rng.uniform(0, 360)
    scale = rng.uniform(0.88, 1.12)
    shift = rng.uniform(-0.06, 0.06, 2) * BASE / 3  # up to 6% of a die side along each axis
    matrix = np.array(cv2.getRotationMatrix2D((BASE / 2, BASE / 2), angle, scale), dtype=np.float64)
    matrix[:, 2] = matrix[:, 2] + shift - (BASE - INPUT) / 2
    view = cv2.warpAffine(
        np.ascontiguousarray(base),
        matrix,
        (INPUT, INPUT),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REFLECT,
    ).astype(np.float32)
    if rng.random() < 0.3:
        view = view[:, :, rng.permutation(3)]
    if rng.random() < 0.15:
        view = np.repeat(view.mean(axis=2, keepdims=True), 3, axis=2)
    mean = view.mean()
    view = (view - mean) * rng.uniform(0.7, 1.3) + mean * rng.uniform(0.7, 1.3)
    view = view * rng.uniform(0.9, 1.1, 3).astype(np.float32)
    if rng.random() < 0.3:
        view = cv2.GaussianBlur(view, (0, 0), rng.uniform(0.4, 1.3))
    if rng.random() < 0.3:
        view = view + rng.normal(0, rng.uniform(1, 6), view.shape).astype(np.float32)
    return np.clip(view, 0, 255)


def to_input(views: np.ndarray) -> np.ndarray:
    """N x INPUT x INPUT x 3 (0-255) -> N x 3 x INPUT x INPUT float32, centred."""
    return np.ascontiguousarray((views.astype(np.float32) / 255.0 - 0.5).transpose(0, 3, 1, 2))


def centre_view(base: np.ndarray) -> np.ndarray:
    margin = (BASE - INPUT) // 2
    return base[margin : margin + INPUT, margin : margin + INPUT]


def tta_views(base: np.ndarray, count: int) -> np.ndarray:
    view = centre_view(base)
    views = [np.rot90(v, k) for v in (view, view[:, ::-1]) for k in range(4)]
    return np.stack(views[:count])


# --- the model ----------------------------------------------------------------------------------------


def train(crops: Crops, settings: Settings, seed: int) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """Train on `crops`; returns the layers with batch norm folded (for the ONNX writer) and statistics."""
    import torch  # only training needs torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)

    layers: list[nn.Module] = []
    previous = 3
    for number, channels in enumerate(CHANNELS):
        layers += [
            nn.Conv2d(previous, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        ]
        if number < len(CHANNELS) - 1:
            layers.append(nn.MaxPool2d(2))
        previous = channels
    features = nn.Sequential(*layers)
    model = nn.Sequential(
        features, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(previous, 6)
    )
    parameters = sum(p.numel() for p in model.parameters())
    optimiser = torch.optim.AdamW(
        model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
    )
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimiser, settings.learning_rate, total_steps=settings.steps
    )
    loss_function = nn.CrossEntropyLoss()
    labels = torch.as_tensor(crops.values - 1, dtype=torch.long)
    started = time.perf_counter()
    model.train()
    losses = []
    for _step in range(settings.steps):
        chosen = rng.integers(0, len(crops.values), settings.batch)
        batch = to_input(np.stack([augment(crops.pixels[i], rng) for i in chosen]))
        optimiser.zero_grad()
        loss = loss_function(model(torch.from_numpy(batch)), labels[chosen])
        loss.backward()
        optimiser.step()
        schedule.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - started
    model.eval()

    folded: list[tuple[str, Any]] = []
    modules = list(features)
    index = 0
    while index < len(modules):
        module = modules[index]
        if isinstance(module, nn.Conv2d):
            norm = modules[index + 1]
            assert isinstance(norm, nn.BatchNorm2d)
            assert norm.running_var is not None and norm.running_mean is not None
            scale = norm.weight.detach() / torch.sqrt(norm.running_var + norm.eps)
            weight = module.weight.detach() * scale[:, None, None, None]
            bias = norm.bias.detach() - norm.running_mean * scale
            folded.append(("conv", (weight.numpy().astype(np.float32), bias.numpy().astype(np.float32))))
            index += 2
            continue
        if isinstance(module, nn.ReLU):
            folded.append(("relu", None))
        elif isinstance(module, nn.MaxPool2d):
            folded.append(("maxpool", None))
        index += 1
    linear = model[-1]
    assert isinstance(linear, nn.Linear)
    folded.append(("gap", None))
    folded.append(
        (
            "linear",
            (
                linear.weight.detach().numpy().astype(np.float32),
                linear.bias.detach().numpy().astype(np.float32),
            ),
        )
    )

    # the folded network must give torch's answer (checked again through OpenCV after export)
    check = to_input(np.stack([centre_view(crops.pixels[i]) for i in range(min(32, len(crops.values)))]))
    with torch.no_grad():
        reference = torch.softmax(model(torch.from_numpy(check)), dim=1).numpy()
    stats = {
        "parameters": parameters,
        "training_seconds": round(seconds, 1),
        "steps": settings.steps,
        "batch": settings.batch,
        "loss_first_100": round(float(np.mean(losses[:100])), 4),
        "loss_last_100": round(float(np.mean(losses[-100:])), 4),
        "_check_input": check,
        "_check_output": reference,
    }
    return folded, stats


# --- ONNX, written by hand (protobuf wire format; only what this network needs) -------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_varint(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _field_bytes(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor(name: str, array: np.ndarray) -> bytes:  # TensorProto
    dims = b"".join(_field_varint(1, d) for d in array.shape)
    return dims + _field_varint(2, 1) + _field_bytes(8, name) + _field_bytes(9, array.astype("<f4").tobytes())


def _attribute_int(name: str, value: int) -> bytes:  # AttributeProto INT
    return _field_bytes(1, name) + _field_varint(3, value) + _field_varint(20, 2)


def _attribute_ints(name: str, values: list[int]) -> bytes:  # AttributeProto INTS
    return _field_bytes(1, name) + b"".join(_field_varint(8, v) for v in values) + _field_varint(20, 7)


def _node(
    op: str, inputs: list[str], outputs: list[str], name: str, attributes: list[bytes] | None = None
) -> bytes:
    body = b"".join(_field_bytes(1, i) for i in inputs) + b"".join(_field_bytes(2, o) for o in outputs)
    body += (
        _field_bytes(3, name) + _field_bytes(4, op) + b"".join(_field_bytes(5, a) for a in attributes or [])
    )
    return body


def _value_info(name: str, dims: list[int | str]) -> bytes:
    shape = b"".join(
        _field_bytes(1, _field_bytes(2, d) if isinstance(d, str) else _field_varint(1, d)) for d in dims
    )
    tensor_type = _field_varint(1, 1) + _field_bytes(2, shape)
    return _field_bytes(1, name) + _field_bytes(2, _field_bytes(1, tensor_type))


def onnx_bytes(folded: list[tuple[str, Any]]) -> bytes:
    nodes, initializers = [], []
    current = "input"
    for number, (op, params) in enumerate(folded):
        out = f"t{number}"
        if op == "conv":
            weight, bias = params
            initializers += [_tensor(f"w{number}", weight), _tensor(f"b{number}", bias)]
            attributes = [_attribute_ints("kernel_shape", [3, 3]), _attribute_ints("pads", [1, 1, 1, 1])]
            nodes.append(
                _node("Conv", [current, f"w{number}", f"b{number}"], [out], f"conv{number}", attributes)
            )
        elif op == "relu":
            nodes.append(_node("Relu", [current], [out], f"relu{number}"))
        elif op == "maxpool":
            attributes = [_attribute_ints("kernel_shape", [2, 2]), _attribute_ints("strides", [2, 2])]
            nodes.append(_node("MaxPool", [current], [out], f"pool{number}", attributes))
        elif op == "gap":
            nodes.append(_node("GlobalAveragePool", [current], [f"{out}g"], f"gap{number}"))
            nodes.append(_node("Flatten", [f"{out}g"], [out], f"flat{number}", [_attribute_int("axis", 1)]))
        elif op == "linear":
            weight, bias = params
            initializers += [_tensor(f"w{number}", weight), _tensor(f"b{number}", bias)]
            nodes.append(
                _node(
                    "Gemm",
                    [current, f"w{number}", f"b{number}"],
                    [out],
                    f"fc{number}",
                    [_attribute_int("transB", 1)],
                )
            )
        current = out
    nodes.append(_node("Softmax", [current], ["probabilities"], "softmax", [_attribute_int("axis", 1)]))
    graph = b"".join(_field_bytes(1, n) for n in nodes) + _field_bytes(2, "dice_cnn")
    graph += b"".join(_field_bytes(5, t) for t in initializers)
    graph += _field_bytes(11, _value_info("input", ["batch", 3, INPUT, INPUT]))
    graph += _field_bytes(12, _value_info("probabilities", ["batch", 6]))
    opset = _field_bytes(1, "") + _field_varint(2, 13)
    return (
        _field_varint(1, 7)
        + _field_bytes(2, "tablectl bench/dice_cnn.py")
        + _field_bytes(7, graph)
        + _field_bytes(8, opset)
    )


# --- reading through OpenCV ---------------------------------------------------------------------------


class OnnxDieReader:
    """What the product would run: OpenCV DNN on the shipped ONNX file, top class of the averaged softmax."""

    def __init__(self, paths: list[Path], threshold: float, tta: int) -> None:
        self.nets = [cv2.dnn.readNetFromONNX(str(path)) for path in paths]
        self.threshold = threshold
        self.tta = tta

    def probabilities(self, base: np.ndarray) -> np.ndarray:
        """The softmax averaged over the TTA views and the members of an ensemble."""
        views = to_input(tta_views(base, self.tta))
        outputs = []
        for net in self.nets:
            net.setInput(views)
            outputs.append(np.asarray(net.forward()).reshape(-1, 6))
        return np.concatenate(outputs).mean(axis=0)

    def read(self, base: np.ndarray) -> tuple[int | None, int, float]:
        """(value or None when below the threshold, top value, its probability)."""
        probabilities = self.probabilities(base)
        top = int(np.argmax(probabilities))
        probability = float(probabilities[top])
        return (top + 1 if probability >= self.threshold else None), top + 1, probability


def choose_threshold(held_out: list[tuple[OnnxDieReader, Crops]], least: float) -> dict[str, Any]:
    """From dice each model did not train on: above the top probability of every wrong top answer (and
    `least`), with half of the remaining doubt as a margin."""
    found: list[tuple[int, float]] = []  # (right?, top probability)
    for reader, crops in held_out:
        for base, value in zip(crops.pixels, crops.values, strict=True):
            _, top, probability = reader.read(base)
            found.append((int(top == value), probability))
    wrong_probabilities = [probability for right, probability in found if not right]
    worst = max([least, *wrong_probabilities])
    threshold = 1 - (1 - worst) / 2
    return {
        "threshold": threshold,
        "held_out_dice": len(found),
        "held_out_top1_right": sum(right for right, _ in found),
        "held_out_wrong_top_probabilities": sorted(round(p, 6) for p in wrong_probabilities),
        "held_out_read_right_at_threshold": sum(right for right, p in found if p >= threshold),
    }


def measure(reader: OnnxDieReader, test: Crops, tallies: dict[str, Tally]) -> tuple[int, float]:
    seconds = 0.0
    kinds: dict[str, dict[str, list[str]]] = {"corrected": {}, "published": {}}
    for i, base in enumerate(test.pixels):
        started = time.perf_counter()
        value, top, probability = reader.read(base)
        seconds += time.perf_counter() - started
        for labels in ("corrected", "published"):
            truth = int(test.values[i] if labels == "corrected" else test.published[i])
            tally = tallies[labels]
            outcome = kind(truth, value)
            tally.dice[outcome] += 1
            kinds[labels].setdefault(test.image[i], []).append(outcome)
            if outcome == "unreadable":
                tally.reasons[f"below the threshold (top answer {'right' if top == truth else 'wrong'})"] += 1
            if outcome == "wrong":
                tally.wrong.append(
                    {
                        "image": test.image[i],
                        "label_line": test.line[i],
                        "label": truth,
                        "read": value,
                        "probability": round(probability, 6),
                    }
                )
            tally.by_confidence[f"{confidence_bin(probability)} {kind(truth, top)}"] += 1
    for labels in ("corrected", "published"):
        for outcomes in kinds[labels].values():
            tallies[labels].images[image_kind(outcomes)] += 1
    return len(test.values), seconds


# --- the run ------------------------------------------------------------------------------------------


def run_dataset(data: Path, dataset: str, settings: Settings, models: Path, stamp: str) -> dict[str, Any]:
    photos = load_photos(data, dataset)
    box_kind, published, halves = photos.box_kind, photos.published, photos.halves
    tallies = {labels: Tally() for labels in ("corrected", "published")}
    fold_reports = []
    reads, seconds = 0, 0.0
    for number, (calibration, test) in enumerate(((halves[0], halves[1]), (halves[1], halves[0])), 1):
        fixed_side = fixed_side_of(calibration)
        parts = inner_parts(dataset, calibration)
        # one model: trained on parts 1-3, threshold from part 0. An ensemble of 4: member k is trained on all
        # parts but k, the threshold comes from every calibration die read by the member that did not see it.
        held_out_parts = [0] if settings.members == 1 else list(range(len(parts)))
        held_out: list[tuple[OnnxDieReader, Crops]] = []
        paths, members = [], []
        cv2.setNumThreads(1)
        for k in held_out_parts:
            training = [e for part, examples_ in enumerate(parts) if part != k for e in examples_]
            training_crops = build_crops(training, published, fixed_side)
            held_out_crops = build_crops(parts[k], published, fixed_side)
            print(
                f"  {dataset} fold {number} model {k}: training on {len(training_crops.values)} dice, "
                f"{len(held_out_crops.values)} held out for the threshold...",
                file=sys.stderr,
            )
            folded, stats = train(training_crops, settings, SEED + number + 100 * k)
            path = models / f"dice-cnn-{stamp}-{dataset}-fold{number}-model{k}.onnx"
            path.write_bytes(onnx_bytes(folded))
            member = OnnxDieReader([path], 1.0, settings.tta)
            member.nets[0].setInput(stats.pop("_check_input"))
            difference = float(
                np.abs(np.asarray(member.nets[0].forward()) - stats.pop("_check_output")).max()
            )
            if difference > 1e-4:
                raise SystemExit(f"the ONNX model does not give torch's answer (difference {difference})")
            data_bytes = path.read_bytes()
            members.append(
                {
                    **stats,
                    "trained_on_images": sorted(e.name for e in training),
                    "held_out_images": sorted(e.name for e in parts[k]),
                    "onnx_bytes": len(data_bytes),
                    "onnx_sha256": hashlib.sha256(data_bytes).hexdigest(),
                    "onnx_vs_torch_max_difference": difference,
                }
            )
            held_out.append((member, held_out_crops))
            paths.append(path)
        choice = choose_threshold(held_out, settings.least_threshold)
        reader = OnnxDieReader(paths, choice["threshold"], settings.tta)
        test_crops = build_crops(test, published, fixed_side)
        fold_tallies = {labels: Tally() for labels in ("corrected", "published")}
        n, s = measure(reader, test_crops, fold_tallies)
        reads, seconds = reads + n, seconds + s
        for labels in ("corrected", "published"):
            merge(tallies[labels], fold_tallies[labels])
        fold_reports.append(
            {
                "fold": number,
                "calibration_images": len(calibration),
                "test_images": len(test),
                "test_dice": len(test_crops.values),
                "crop_side_px": round(3 * fixed_side, 1) if box_kind == "pips" else "3x each die's side",
                "models": members,
                "threshold": choice,
                "ms_per_crop": round(1000 * s / max(1, n), 2),
                "results": {labels: fold_tallies[labels].as_dict() for labels in ("corrected", "published")},
            }
        )
        print(
            f"  {dataset} fold {number}: threshold {choice['threshold']:.6f}, "
            f"test {dict(fold_tallies['corrected'].dice)}",
            file=sys.stderr,
        )
    return {
        **photos.header(),
        "folds": fold_reports,
        "results": {labels: tallies[labels].as_dict() for labels in ("corrected", "published")},
        "ms_per_crop": round(1000 * seconds / max(1, reads), 2),
    }


# --- report -------------------------------------------------------------------------------------------


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Small CNN on one die (crop), real photographs",
        "",
        machine_line(report, f"torch {report['machine']['torch']} (training only)"),
        "",
        *tally_header("fold"),
    ]
    for result in report["datasets"]:
        for labels in ("corrected", "published"):
            for fold in result["folds"]:
                lines.append(
                    tally_row(result["dataset"], f"fold {fold['fold']}", labels, fold["results"][labels])
                )
            lines.append(tally_row(result["dataset"], "both", labels, result["results"][labels]))
    lines.append("")
    for result in report["datasets"]:
        for fold in result["folds"]:
            models = fold["models"]
            lines.append(
                f"- {result['dataset']} fold {fold['fold']}: threshold {fold['threshold']['threshold']:.6f} "
                f"(from {fold['threshold']['held_out_dice']} held-out calibration dice, "
                f"{len(fold['threshold']['held_out_wrong_top_probabilities'])} top answers wrong); "
                f"{len(models)} model(s) of {models[0]['parameters']} parameters, "
                f"ONNX {models[0]['onnx_bytes']} bytes each, trained in "
                f"{' + '.join(str(m['training_seconds']) for m in models)} s; "
                f"{fold['ms_per_crop']} ms per crop (OpenCV DNN)"
            )
        for labels in ("corrected", "published"):
            for wrong in result["results"][labels]["wrong_readings"]:
                lines.append(
                    f"- WRONG ({labels} labels): {result['dataset']} {wrong['image']} "
                    f"line {wrong['label_line']}: "
                    f"label {wrong['label']}, read {wrong['read']} with probability {wrong['probability']}"
                )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    parser.add_argument("--steps", type=int, default=Settings.steps, help="training steps per fold")
    parser.add_argument(
        "--members", type=int, choices=(1, 4), default=Settings.members, help="models in the ensemble"
    )
    parser.add_argument("--models", type=Path, default=None, help="keep the ONNX models in this folder")
    common.add_output_argument(parser, "dice-cnn")
    args = parser.parse_args(argv)
    names = [name for name in args.datasets.split(",") if name]
    unknown = [name for name in names if name not in DATASETS]
    if unknown:
        parser.error(f"unknown data set(s) {', '.join(unknown)}; known: {', '.join(DATASETS)}")
    import torch

    settings = Settings(steps=args.steps, members=args.members)
    now = common.now()
    stamp = now.strftime("%Y%m%d")
    report: dict[str, Any] = {
        **common.header(
            "dice-cnn",
            now,
            common.machine(
                opencv=cv2.__version__,
                numpy=np.__version__,
                torch=torch.__version__,
                threads="torch 1, OpenCV 1",
            ),
            measured=("bench/dice_cnn.py", "bench/dice_accuracy.py"),
            what="an experiment: a small CNN reading one die crop, measured as dice_accuracy.py measures",
        ),
        "dataset_sources": dataset_commits(args.data),
        "settings": {
            **settings.__dict__,
            "crop": "crop_around as measure_crops; padded square; resized to 96x96 (3 die sides)",
            "input": f"central {INPUT}x{INPUT} (2 die sides), BGR / 255 - 0.5",
            "channels": list(CHANNELS),
            "threshold_rule": "1 - (1 - max(least_threshold, top probability of every wrong answer on "
            "held-out calibration dice)) / 2",
            "seed": SEED,
        },
        "errata": [
            {"dataset": d, "image": i, "label_line": n + 1, "published": p, "true": t, "why": w}
            for d, i, n, p, t, w in ERRATA
        ],
        "datasets": [],
    }
    with tempfile.TemporaryDirectory() as temporary:
        models = args.models or Path(temporary)
        models.mkdir(parents=True, exist_ok=True)
        for name in names:
            report["datasets"].append(run_dataset(args.data, name, settings, models, stamp))
    output = common.write_result("dice-cnn", report, args.output)
    print(markdown(report))
    print(f"\nWritten: {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
