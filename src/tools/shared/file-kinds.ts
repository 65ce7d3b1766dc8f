import { extname } from "node:path";

/** Images and audio larger than this are described, not attached. */
export const MAX_MEDIA_BYTES = 20 * 1024 * 1024;

const IMAGE_TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".bmp": "image/bmp",
  ".svg": "image/svg+xml",
};

const AUDIO_TYPES: Record<string, string> = {
  ".wav": "audio/wav",
  ".mp3": "audio/mpeg",
  ".aac": "audio/aac",
  ".ogg": "audio/ogg",
  ".flac": "audio/flac",
  ".m4a": "audio/mp4",
};

/** Known binary formats, refused without looking inside (text sniffing catches the rest). */
const BINARY_EXTENSIONS = new Set(
  (
    ".pdf .zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .jar .war .wasm .exe .dll .so .dylib .o .a .lib .class .pyc " +
    ".node .bin .dat .db .sqlite .sqlite3 .ico .tif .tiff .psd .heic .avif .mp4 .mov .avi .mkv .webm .wmv .flv " +
    ".woff .woff2 .ttf .otf .eot .doc .docx .xls .xlsx .ppt .pptx .odt .ods .iso .dmg .img .deb .rpm .apk"
  ).split(" "),
);

export type FileKind = { kind: "image" | "audio"; mediaType: string } | { kind: "binary" } | { kind: "text" };

/** Classifies by extension; "text" means "sniff the bytes". */
export function fileKind(path: string): FileKind {
  const ext = extname(path).toLowerCase();
  const image = IMAGE_TYPES[ext];
  if (image) return { kind: "image", mediaType: image };
  const audio = AUDIO_TYPES[ext];
  if (audio) return { kind: "audio", mediaType: audio };
  if (BINARY_EXTENSIONS.has(ext)) return { kind: "binary" };
  return { kind: "text" };
}
