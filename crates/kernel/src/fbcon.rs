//! The screen console: the kernel's console text drawn on the linear framebuffer the
//! loader set up (multiboot2 tag 8: GRUB EFI hands over UEFI's GOP mode, GRUB i386-pc a
//! VBE mode or the VGA text screen), for PCs without a legacy serial port.
//!
//! - **Checked first** ([`Geometry::check`]): the loader's numbers are not trusted. Direct
//!   RGB at 15, 16, 24 or 32 bits per pixel with colour fields inside the pixel, or EGA
//!   text; a pitch that holds a line; a size that fits the address space. Anything else
//!   is refused with a reason (the serial console says which) and nothing is drawn.
//! - **Font**: font8x8's public-domain 8x8 glyphs (basic Latin, 1 KiB), each row drawn
//!   twice: 8x16 cells, the VGA text mode's shape, so 1024x768 holds 128x48 characters.
//!   Wider screens scale the cell (2x from 2048 pixels) so text stays readable.
//! - **Cheap**: the text is kept in a grid of characters, and a second grid says what is
//!   on the screen; a cell is drawn only when the two differ. Scrolling moves the grid a
//!   quarter of the screen at once ("jump scroll"), so the pixels are rewritten once per
//!   quarter screen of lines, not once per line, and never read back (framebuffer reads
//!   are slow on real hardware: uncached or write-combined memory).
//!
//! The caller ([`crate::console`]) serialises access under its lock.

use crate::boot_info::Framebuffer;

/// Most text columns and rows kept (a 4K screen at 2x scale is 240x67).
pub const MAX_COLS: usize = 240;
/// See [`MAX_COLS`].
pub const MAX_ROWS: usize = 100;
/// An empty cell: the font's glyph 0 is blank, as a space is; 0 keeps the grids (and the
/// console's static) in .bss.
const BLANK: u8 = 0;
/// Largest glyph scale (a 16384-pixel-high screen needs 11 to fit [`MAX_ROWS`]).
const MAX_SCALE: usize = 12;
/// Bytes of one glyph row at most.
const ROW_MAX: usize = 8 * MAX_SCALE * 4;
/// Largest width or height accepted, in pixels.
const MAX_PIXELS: u32 = 16384;

/// Text colour (light grey, as the VGA text mode's default) and background (black).
const FG: (u8, u8, u8) = (0xAA, 0xAA, 0xAA);
const BG: (u8, u8, u8) = (0, 0, 0);
/// EGA text attribute: light grey on black.
const EGA_ATTR: u16 = 0x07;

/// Why a framebuffer is not drawn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Indexed colours (a palette we would have to program), or an unknown type.
    Kind(u8),
    /// Bits per pixel other than 15, 16, 24 or 32 (16 for EGA text).
    Bpp(u8),
    /// A colour field outside the pixel, or wider than 8 bits.
    Colours,
    /// Zero, too small for one character, or over 16384 pixels.
    Size,
    /// The pitch does not hold one line.
    Pitch,
    /// Address zero, or the framebuffer's end beyond physical addresses.
    Address,
}

impl core::fmt::Display for Refused {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Refused::Kind(k) => write!(f, "framebuffer type {k} (indexed colours or unknown)"),
            Refused::Bpp(b) => write!(f, "{b} bits per pixel"),
            Refused::Colours => f.write_str("colour fields outside the pixel"),
            Refused::Size => f.write_str("size zero or too large"),
            Refused::Pitch => f.write_str("pitch shorter than a line"),
            Refused::Address => f.write_str("address out of range"),
        }
    }
}

/// How a cell is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Pixels of `bytes` bytes; `fg`/`bg` are the pixel values.
    Pixels {
        /// Bytes per pixel: 2, 3 or 4.
        bytes: usize,
        /// Glyph scale: a cell is 8·scale by 16·scale pixels.
        scale: usize,
        /// Text pixel value.
        fg: u32,
        /// Background pixel value.
        bg: u32,
    },
    /// EGA text: a 16-bit cell of character and attribute.
    EgaText,
}

/// A framebuffer checked for drawing: where, how, and the text grid it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Physical (identity-mapped) address of the first pixel.
    pub addr: u64,
    /// Bytes from one line to the next.
    pub pitch: usize,
    /// Lines (pixel rows, or text rows for EGA text).
    pub lines: usize,
    /// Width in pixels (or characters), for the console's report.
    pub width: u32,
    /// Bits per pixel, for the report.
    pub bpp: u8,
    /// How cells are drawn.
    pub mode: Mode,
    /// Text columns.
    pub cols: usize,
    /// Text rows.
    pub rows: usize,
}

fn pixel(rgb: [(u8, u8); 3], c: (u8, u8, u8)) -> u32 {
    let mut v = 0u32;
    for ((pos, size), x) in rgb.into_iter().zip([c.0, c.1, c.2]) {
        v |= ((x as u32) >> (8 - size)) << pos;
    }
    v
}

impl Geometry {
    /// Checks the loader's description; never panics.
    pub fn check(fb: &Framebuffer) -> Result<Geometry, Refused> {
        if fb.width == 0 || fb.height == 0 || fb.width > MAX_PIXELS || fb.height > MAX_PIXELS {
            return Err(Refused::Size);
        }
        let (mode, cols, rows, line_bytes) = match fb.kind {
            1 => {
                let bytes = match fb.bpp {
                    15 | 16 => 2,
                    24 => 3,
                    32 => 4,
                    b => return Err(Refused::Bpp(b)),
                };
                for (pos, size) in fb.rgb {
                    if size == 0 || size > 8 || pos as u32 + size as u32 > fb.bpp as u32 {
                        return Err(Refused::Colours);
                    }
                }
                // The smallest scale whose grid fits the text arrays; 2x from 2048 pixels.
                let mut scale = 1 + (fb.width as usize >= 2048) as usize;
                while (fb.width as usize / (8 * scale)) > MAX_COLS
                    || (fb.height as usize / (16 * scale)) > MAX_ROWS
                {
                    scale += 1;
                }
                if scale > MAX_SCALE {
                    return Err(Refused::Size);
                }
                let mode = Mode::Pixels {
                    bytes,
                    scale,
                    fg: pixel(fb.rgb, FG),
                    bg: pixel(fb.rgb, BG),
                };
                let cols = fb.width as usize / (8 * scale);
                let rows = fb.height as usize / (16 * scale);
                (mode, cols, rows, fb.width as usize * bytes)
            }
            2 => {
                if fb.bpp != 16 {
                    return Err(Refused::Bpp(fb.bpp));
                }
                let cols = fb.width as usize;
                let rows = fb.height as usize;
                if cols > MAX_COLS || rows > MAX_ROWS {
                    return Err(Refused::Size);
                }
                (Mode::EgaText, cols, rows, cols * 2)
            }
            k => return Err(Refused::Kind(k)),
        };
        if cols == 0 || rows == 0 {
            return Err(Refused::Size);
        }
        if (fb.pitch as usize) < line_bytes {
            return Err(Refused::Pitch);
        }
        let len = fb.pitch as u64 * fb.height as u64;
        match fb.addr.checked_add(len) {
            Some(end) if fb.addr != 0 && end <= 1 << 52 => {}
            _ => return Err(Refused::Address),
        }
        Ok(Geometry {
            addr: fb.addr,
            pitch: fb.pitch as usize,
            lines: fb.height as usize,
            width: fb.width,
            bpp: fb.bpp,
            mode,
            cols,
            rows,
        })
    }

    /// Bytes the framebuffer spans.
    pub fn len(&self) -> u64 {
        (self.pitch * self.lines) as u64
    }

    /// Always false: a checked geometry has at least one line.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }
}

/// The text on the screen and where the next character goes.
pub struct Screen {
    g: Geometry,
    /// What the text is.
    text: [u8; MAX_COLS * MAX_ROWS],
    /// What the pixels show (`text` once every changed cell is drawn).
    drawn: [u8; MAX_COLS * MAX_ROWS],
    row: usize,
    col: usize,
    /// The next byte is a UTF-8 continuation byte to skip.
    in_utf8: bool,
}

impl Screen {
    /// An empty screen (nothing drawn until [`Screen::attach`]).
    pub const fn new() -> Screen {
        Screen {
            g: Geometry {
                addr: 0,
                pitch: 0,
                lines: 0,
                width: 0,
                bpp: 0,
                // All zero bytes: the console's static stays in .bss, not in the file.
                mode: Mode::Pixels {
                    bytes: 0,
                    scale: 0,
                    fg: 0,
                    bg: 0,
                },
                cols: 0,
                rows: 0,
            },
            text: [BLANK; MAX_COLS * MAX_ROWS],
            drawn: [BLANK; MAX_COLS * MAX_ROWS],
            row: 0,
            col: 0,
            in_utf8: false,
        }
    }

    /// Whether a framebuffer is attached.
    pub fn attached(&self) -> bool {
        self.g.cols > 0
    }

    /// Starts drawing on `g`: clears it to the background.
    ///
    /// # Safety
    /// `[g.addr, g.addr + g.len())` must be mapped, writable framebuffer memory that
    /// nothing else uses, for as long as this screen draws.
    pub unsafe fn attach(&mut self, g: Geometry) {
        self.g = g;
        self.row = 0;
        self.col = 0;
        self.text.fill(BLANK);
        self.drawn.fill(BLANK);
        match g.mode {
            Mode::Pixels { bytes, .. } => {
                // The background is black: zero bytes in every pixel format.
                for y in 0..g.lines {
                    // SAFETY: y < lines and width·bytes <= pitch: inside the framebuffer
                    // (caller).
                    unsafe {
                        crate::mem::zero(
                            (g.addr as usize + y * g.pitch) as *mut u8,
                            g.width as usize * bytes,
                        )
                    };
                }
            }
            Mode::EgaText => {
                for r in 0..g.rows {
                    for c in 0..g.cols {
                        // SAFETY: a cell of the checked text grid (caller).
                        unsafe { self.draw(r, c, BLANK) };
                    }
                }
            }
        }
    }

    /// Draws character `ch` in cell (`r`, `c`).
    ///
    /// # Safety
    /// The screen is attached (see [`Screen::attach`]); `r < rows`, `c < cols`.
    unsafe fn draw(&self, r: usize, c: usize, ch: u8) {
        let g = &self.g;
        match g.mode {
            Mode::EgaText => {
                let off = r * g.pitch + c * 2;
                let ch = if ch == BLANK { b' ' } else { ch };
                let p = (g.addr as usize + off) as *mut u16;
                // SAFETY: cols * 2 <= pitch and r < rows = lines (checked geometry); the
                // text buffer is 2-aligned (0xB8000).
                unsafe { p.write_volatile((EGA_ATTR << 8) | ch as u16) };
            }
            Mode::Pixels {
                bytes,
                scale,
                fg,
                bg,
            } => {
                let glyph = font8x8::legacy::BASIC_LEGACY[(ch & 0x7F) as usize];
                let w = 8 * scale * bytes;
                let x0 = c * w;
                let mut buf = [0u8; ROW_MAX];
                for (gy, bits) in glyph.iter().enumerate() {
                    // One row of the glyph's pixels, then written 2·scale times.
                    for gx in 0..8 * scale {
                        let on = (bits >> (gx / scale)) & 1 != 0;
                        let v = (if on { fg } else { bg }).to_le_bytes();
                        buf[gx * bytes..(gx + 1) * bytes].copy_from_slice(&v[..bytes]);
                    }
                    for rep in 0..2 * scale {
                        let y = r * 16 * scale + gy * 2 * scale + rep;
                        // SAFETY: y < rows·16·scale <= lines and the cell's pixels end at
                        // cols·8·scale·bytes <= width·bytes <= pitch: in the framebuffer.
                        unsafe { self.copy_line(y * g.pitch + x0, &buf[..w]) };
                    }
                }
            }
        }
    }

    /// Writes `src` at byte offset `off`: 8 bytes a store when aligned (a glyph row is
    /// 16, 24 or 32 bytes per scale step), else byte by byte.
    ///
    /// # Safety
    /// `[off, off + src.len())` lies inside the attached framebuffer.
    unsafe fn copy_line(&self, off: usize, src: &[u8]) {
        let p = (self.g.addr as usize + off) as *mut u8;
        if p as usize % 8 == 0 && src.len() % 8 == 0 {
            for (k, q) in src.chunks_exact(8).enumerate() {
                let v = u64::from_le_bytes([q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]]);
                // SAFETY: 8-aligned, inside the range (caller); volatile: device memory.
                unsafe { p.cast::<u64>().add(k).write_volatile(v) };
            }
        } else {
            for (k, &b) in src.iter().enumerate() {
                // SAFETY: inside the range (caller).
                unsafe { p.add(k).write_volatile(b) };
            }
        }
    }

    /// Draws every cell whose text changed since it was drawn.
    fn sync(&mut self) {
        for r in 0..self.g.rows {
            for c in 0..self.g.cols {
                let i = r * MAX_COLS + c;
                if self.drawn[i] != self.text[i] {
                    // SAFETY: attached (callers), r < rows, c < cols.
                    unsafe { self.draw(r, c, self.text[i]) };
                    self.drawn[i] = self.text[i];
                }
            }
        }
    }

    /// Ends the line. At the bottom the cursor waits below the last row: the screen
    /// scrolls when the next character comes, so the last line printed stays in view.
    fn newline(&mut self) {
        self.col = 0;
        self.row = (self.row + 1).min(self.g.rows);
    }

    /// Jump scroll: a quarter of the screen at once, redrawing only changed cells.
    fn scroll(&mut self) {
        let rows = self.g.rows;
        let jump = (rows / 4).max(1);
        let keep = rows - jump;
        self.text.copy_within(jump * MAX_COLS..rows * MAX_COLS, 0);
        self.text[keep * MAX_COLS..rows * MAX_COLS].fill(BLANK);
        self.sync();
        self.row = keep;
    }

    /// Puts one byte of console text: printable ASCII is drawn, `\n` starts a line, a
    /// tab moves to the next multiple of 8, `\r` is ignored, anything else is `?` (a
    /// UTF-8 sequence once). Does nothing before [`Screen::attach`].
    pub fn write_byte(&mut self, b: u8) {
        if !self.attached() {
            return;
        }
        let ch = match b {
            b'\n' => {
                self.in_utf8 = false;
                self.newline();
                return;
            }
            b'\r' => return,
            b'\t' => {
                let to = ((self.col / 8) + 1) * 8;
                while self.col < to.min(self.g.cols) {
                    self.write_byte(b' ');
                }
                return;
            }
            0x80..=0xBF if self.in_utf8 => return,
            0x20..=0x7E => b,
            _ => b'?',
        };
        self.in_utf8 = b >= 0xC0;
        if self.col == self.g.cols {
            self.newline();
        }
        if self.row == self.g.rows {
            self.scroll();
        }
        let i = self.row * MAX_COLS + self.col;
        self.text[i] = ch;
        if self.drawn[i] != ch {
            // SAFETY: attached, row < rows, col < cols.
            unsafe { self.draw(self.row, self.col, ch) };
            self.drawn[i] = ch;
        }
        self.col += 1;
    }

    /// The text of row `r` (blank cells are 0), for tests and reports.
    pub fn row_text(&self, r: usize) -> &[u8] {
        let r = r.min(MAX_ROWS - 1);
        &self.text[r * MAX_COLS..r * MAX_COLS + self.g.cols]
    }

    /// The checked geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.g
    }
}

impl Default for Screen {
    fn default() -> Self {
        Screen::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec::Vec;

    fn fb(addr: u64, pitch: u32, w: u32, h: u32, bpp: u8, kind: u8) -> Framebuffer {
        Framebuffer {
            addr,
            pitch,
            width: w,
            height: h,
            bpp,
            kind,
            rgb: [(16, 8), (8, 8), (0, 8)],
        }
    }

    #[test]
    fn odd_and_hostile_framebuffers_are_refused() {
        let ok = fb(0x8000_0000, 4096, 1024, 768, 32, 1);
        let g = Geometry::check(&ok).unwrap();
        assert_eq!((g.cols, g.rows, g.len()), (128, 48, 4096 * 768));
        assert_eq!(
            g.mode,
            Mode::Pixels {
                bytes: 4,
                scale: 1,
                fg: 0xAAAAAA,
                bg: 0
            }
        );
        let bad = |f: Framebuffer| Geometry::check(&f).unwrap_err();
        assert_eq!(bad(fb(0x8000_0000, 4096, 1024, 768, 8, 1)), Refused::Bpp(8));
        assert_eq!(
            bad(fb(0x8000_0000, 4096, 1024, 768, 8, 0)),
            Refused::Kind(0)
        );
        assert_eq!(
            bad(fb(0x8000_0000, 4096, 1024, 768, 32, 7)),
            Refused::Kind(7)
        );
        assert_eq!(bad(fb(0x8000_0000, 4095, 1024, 768, 32, 1)), Refused::Pitch);
        assert_eq!(bad(fb(0x8000_0000, 3000, 1024, 768, 24, 1)), Refused::Pitch);
        assert_eq!(bad(fb(0, 4096, 1024, 768, 32, 1)), Refused::Address);
        assert_eq!(
            bad(fb(u64::MAX - 10, 4096, 1024, 768, 32, 1)),
            Refused::Address
        );
        assert_eq!(bad(fb(1 << 52, 4096, 1024, 768, 32, 1)), Refused::Address);
        assert_eq!(bad(fb(0x8000_0000, 4096, 0, 768, 32, 1)), Refused::Size);
        assert_eq!(bad(fb(0x8000_0000, 4096, 7, 768, 32, 1)), Refused::Size);
        assert_eq!(
            bad(fb(0x8000_0000, u32::MAX, 40000, 768, 32, 1)),
            Refused::Size
        );
        assert_eq!(bad(fb(0xb8000, 160, 80, 25, 8, 2)), Refused::Bpp(8));
        assert_eq!(bad(fb(0xb8000, 100, 80, 25, 16, 2)), Refused::Pitch);
        assert_eq!(bad(fb(0xb8000, 1000, 500, 25, 16, 2)), Refused::Size);
        let mut f = ok;
        f.rgb[0] = (28, 8); // red past bit 32
        assert_eq!(bad(f), Refused::Colours);
        f.rgb[0] = (0, 9);
        assert_eq!(bad(f), Refused::Colours);
        f.rgb[0] = (0, 0);
        assert_eq!(bad(f), Refused::Colours);
        // Above 4 GiB is fine (mapped by the caller); 16 bpp 5:6:5 and 24 bpp too.
        assert!(Geometry::check(&fb(0x80_0000_0000, 4096, 1024, 768, 32, 1)).is_ok());
        let mut f = fb(0xE000_0000, 2048, 1024, 768, 16, 1);
        f.rgb = [(11, 5), (5, 6), (0, 5)];
        let g = Geometry::check(&f).unwrap();
        assert_eq!(
            g.mode,
            Mode::Pixels {
                bytes: 2,
                scale: 1,
                fg: (0x15 << 11) | (0x2A << 5) | 0x15,
                bg: 0
            }
        );
        // A 4K screen scales the cell; an 8K one more, within the text arrays.
        let g = Geometry::check(&fb(0xE000_0000, 3840 * 4, 3840, 2160, 32, 1)).unwrap();
        assert!(matches!(g.mode, Mode::Pixels { scale: 2, .. }));
        assert_eq!((g.cols, g.rows), (240, 67));
        let g = Geometry::check(&fb(0xE000_0000, 7680 * 4, 7680, 4320, 32, 1)).unwrap();
        assert!(g.cols <= MAX_COLS && g.rows <= MAX_ROWS);
        // Random values: never a panic, and every accepted geometry fits its memory.
        let mut x = 7u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut f = fb(
                x >> 20,
                (x >> 3) as u32 % 70000,
                (x >> 11) as u32 % 20000,
                (x >> 27) as u32 % 20000,
                [15, 16, 24, 32, 8, 0][(x % 6) as usize],
                (x >> 40) as u8 % 4,
            );
            f.rgb = [((x >> 44) as u8 % 33, (x >> 50) as u8 % 10), (8, 8), (0, 8)];
            if let Ok(g) = Geometry::check(&f) {
                let (cw, ch, bytes) = match g.mode {
                    Mode::Pixels { bytes, scale, .. } => (8 * scale, 16 * scale, bytes),
                    Mode::EgaText => (1, 1, 2),
                };
                assert!(
                    g.cols * cw * bytes <= g.pitch && g.rows * ch <= g.lines,
                    "{f:?}"
                );
                assert!(g.cols <= MAX_COLS && g.rows <= MAX_ROWS);
            }
        }
    }

    /// A screen over `mem`, a stand-in framebuffer in host memory.
    fn screen(mem: &mut [u8], f: Framebuffer) -> Box<Screen> {
        let f = Framebuffer {
            addr: mem.as_mut_ptr() as u64,
            ..f
        };
        assert!(f.pitch as usize * f.height as usize <= mem.len());
        let mut s = Box::new(Screen::new());
        // SAFETY: mem outlives the screen in each test and holds pitch·height bytes.
        unsafe { s.attach(Geometry::check(&f).unwrap()) };
        s
    }

    /// Reads the screen back: each cell matched against the font (a test's OCR).
    fn read_back(mem: &[u8], g: &Geometry) -> Vec<alloc::string::String> {
        let Mode::Pixels {
            bytes, scale, fg, ..
        } = g.mode
        else {
            panic!()
        };
        let px = |x: usize, y: usize| {
            let o = y * g.pitch + x * bytes;
            let mut v = 0u32;
            for k in 0..bytes {
                v |= (mem[o + k] as u32) << (8 * k);
            }
            v
        };
        let mut out = Vec::new();
        for r in 0..g.rows {
            let mut line = alloc::string::String::new();
            for c in 0..g.cols {
                let mut cell = [0u8; 8];
                for (gy, row) in cell.iter_mut().enumerate() {
                    for gx in 0..8 {
                        let (x, y) = ((c * 8 + gx) * scale, (r * 16 + gy * 2) * scale);
                        if px(x, y) == fg {
                            *row |= 1 << gx;
                        }
                        assert_eq!(px(x, y), px(x, y + 1), "rows drawn twice");
                    }
                }
                let ch = (0x20u8..0x7F)
                    .find(|&ch| font8x8::legacy::BASIC_LEGACY[ch as usize] == cell)
                    .unwrap_or(b'#');
                line.push(ch as char);
            }
            out.push(line.trim_end().into());
        }
        out
    }

    #[test]
    fn text_is_drawn_and_scrolls_by_quarters() {
        let (w, h) = (320u32, 128u32); // 40x8 cells
        let mut mem = alloc::vec![0x55u8; (w * 4 * h) as usize];
        let mut s = screen(&mut mem, fb(0, w * 4, w, h, 32, 1));
        assert!(mem.iter().all(|&b| b == 0), "cleared to the background");
        for b in b"bareweb kernel 0.1.0\r\nboot: multiboot2\tx\n\xc3\xa9t\xc3\xa9\n" {
            s.write_byte(*b);
        }
        let g = *s.geometry();
        let text = read_back(&mem, &g);
        assert_eq!(
            text[..4],
            [
                "bareweb kernel 0.1.0",
                "boot: multiboot2        x",
                "?t?",
                ""
            ]
        );
        // Fill past the bottom: the screen jumps up by 2 rows (a quarter of 8).
        for i in 0..7 {
            for b in alloc::format!("line {i}\n").bytes() {
                s.write_byte(b);
            }
        }
        let text = read_back(&mem, &g);
        assert_eq!(
            text,
            ["?t?", "line 0", "line 1", "line 2", "line 3", "line 4", "line 5", "line 6"]
        );
        assert_eq!(s.row_text(7).iter().filter(|&&b| b != BLANK).count(), 6);
        // A line longer than the screen wraps.
        for b in [b'x'; 45].iter().chain(b"\n") {
            s.write_byte(*b);
        }
        let text = read_back(&mem, &g);
        assert_eq!(text[5..], ["line 6".into(), "x".repeat(40), "xxxxx".into()]);
    }

    #[test]
    fn pixel_formats_24_and_16_bpp_and_ega_text() {
        let mut mem = alloc::vec![0xFFu8; 3 * 64 * 32 + 64];
        let mut s = screen(&mut mem, fb(0, 3 * 64 + 1, 64, 32, 24, 1));
        s.write_byte(b'A');
        let g = *s.geometry();
        assert_eq!(read_back(&mem, &g)[0], "A");
        assert!(mem[3 * 64..3 * 64 + 1] == [0xFF], "pitch padding untouched");
        let mut mem = alloc::vec![0u8; 2 * 64 * 32];
        let mut f = fb(0, 128, 64, 32, 16, 1);
        f.rgb = [(11, 5), (5, 6), (0, 5)];
        let mut s = screen(&mut mem, f);
        s.write_byte(b'Z');
        let g = *s.geometry();
        assert_eq!(read_back(&mem, &g)[0], "Z");
        let mut mem = alloc::vec![0u8; 160 * 25];
        let mut s = screen(&mut mem, fb(0, 160, 80, 25, 16, 2));
        s.write_byte(b'O');
        s.write_byte(b'K');
        assert_eq!(mem[..6], [b'O', 7, b'K', 7, b' ', 7]);
    }
}
