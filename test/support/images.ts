import sharp from 'sharp';

/**
 * An image of `sentence` in black on white, rendered now by sharp (librsvg, the system's sans-serif
 * font): what a screenshot or a scan of a line of print is to the OCR under test.
 */
function svgOf(sentence: string): Buffer {
  const escaped = sentence.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c]!);
  const width = 40 + sentence.length * 24;
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="120"><rect width="100%" height="100%" fill="white"/><text x="20" y="75" font-family="sans-serif" font-size="40" fill="black">${escaped}</text></svg>`,
  );
}

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';

/** The sentence as an encoded image (PNG by default). */
export function renderSentence(sentence: string, format: ImageFormat = 'png'): Promise<Buffer> {
  return sharp(svgOf(sentence)).toFormat(format).toBuffer();
}

/** The sentence as raw 8-bit greyscale pixels (for a scanned PDF page). */
export async function renderSentenceGrey(sentence: string): Promise<{ width: number; height: number; grey: Buffer }> {
  const { data, info } = await sharp(svgOf(sentence)).flatten({ background: '#ffffff' }).toColourspace('b-w').raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, grey: data };
}

/** OCR output compared word by word: case, punctuation and line breaks aside. */
export function words(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
}
