//! The first instructions: the PVH ELF note and the multiboot2 header, the 32-bit entry
//! both loaders jump to, the identity-mapped page tables and the switch to long mode.
//!
//! The multiboot2 header asks for a framebuffer (optional: text-only loaders still boot)
//! for the screen console (`crate::fbcon`).
//!
//! Entry state (both protocols): 32-bit protected mode, paging off, interrupts off.
//! - PVH (QEMU `-kernel`, qboot): `ebx` = physical address of `hvm_start_info`
//!   (magic 0x336ec578). `eax` is not defined by PVH (qboot leaves 0x2BADB002), so the
//!   protocol is told apart later by the start_info magic.
//! - multiboot2 (GRUB): `eax` = 0x36d76289, `ebx` = physical address of the boot
//!   information. GRUB may put it anywhere free, so it is copied at once to a fixed
//!   low-memory buffer (`MB2_COPY`) before anything of ours is written.
//!
//! Then: page tables identity-mapping the first 4 GiB with 2 MiB pages (this KVM offers
//! no 1 GiB pages; the top GiB, where PCI devices live, is mapped uncached), except the
//! 2 MiB holding the boot stack's guard page (the first or, for an image past 1 MiB, the
//! second) in 4 KiB pages with that guard page left
//! unmapped (an overflow must fault, not silently overwrite the page tables as it once
//! did when the engine built its 256 KiB port table on the stack), PAE, SSE
//! (`OSFXSR`, `OSXMMEXCPT`), `EFER.LME`, paging, a 64-bit GDT, and a far jump to 64-bit
//! code that calls `bw_kernel_main(eax, ebx)`.

/// Where a multiboot2 information block is copied (inside conventional memory, below the
/// kernel at 1 MiB; at most `MB2_COPY_MAX` bytes).
pub const MB2_COPY: u64 = 0x10000;
/// Largest multiboot2 information block copied.
pub const MB2_COPY_MAX: u64 = 0x60000;
/// Bytes of the boot stack (core 0's stack for good). The engine allocates its tables on
/// the heap; the deepest use measured is printed as `stack_max` in the `log=stats` line
/// (a TLS handshake under the core's loop, with the stats page on, came within a few KiB
/// of 64 KiB: 128 KiB leaves room, docs/kernel.md).
pub const BOOT_STACK: usize = 128 * 1024;

#[cfg(target_os = "none")]
extern "C" {
    static bw_stack_guard: u8;
    static bw_boot_stack_top: u8;
}

/// The boot stack's `[lowest, top)` addresses (0, 0 on host builds).
pub fn boot_stack() -> (u64, u64) {
    #[cfg(target_os = "none")]
    {
        // Linker-placed symbols: only their addresses are used.
        let guard = core::ptr::addr_of!(bw_stack_guard) as u64;
        (guard + 4096, core::ptr::addr_of!(bw_boot_stack_top) as u64)
    }
    #[cfg(not(target_os = "none"))]
    (0, 0)
}

#[cfg(target_os = "none")]
core::arch::global_asm!(
    r#"
    .section .multiboot2, "a"
    .p2align 3
bw_mb2_header:
    .long 0xe85250d6
    .long 0
    .long bw_mb2_header_end - bw_mb2_header
    .long 0x100000000 - (0xe85250d6 + (bw_mb2_header_end - bw_mb2_header))
    /* framebuffer tag (5), optional (flags 1): a loader that can gives a linear
       framebuffer (or the EGA text screen) in the information's tag 8, for the screen
       console; 0x0x0 = no preferred mode (grub.cfg says gfxpayload=keep: UEFI's own). */
    .short 5
    .short 1
    .long 20
    .long 0
    .long 0
    .long 0
    .p2align 3
    /* end tag */
    .short 0
    .short 0
    .long 8
bw_mb2_header_end:

    .section .note.Xen, "a"
    .p2align 2
    .long 4
    .long 8
    .long 18
    .asciz "Xen"
    .quad bw_start32

    .section .boot, "awx"
    .code32
    .global bw_start32
bw_start32:
    cli
    cld
    mov %eax, %edi
    mov %ebx, %esi
    mov $bw_boot_stack_top, %esp

    /* multiboot2: copy the information block (total_size at offset 0) to MB2_COPY */
    cmp $0x36d76289, %eax
    jne 3f
    mov (%esi), %ecx
    cmp ${mb2_max}, %ecx
    jbe 1f
    mov ${mb2_max}, %ecx
1:  mov ${mb2_copy}, %edx
    cmp %esi, %edx
    jb 2f
    /* destination above source: copy backwards */
    lea -1(%esi,%ecx), %esi
    lea -1(%edx,%ecx), %edi
    std
    rep movsb
    cld
    jmp 4f
2:  mov %edx, %edi
    rep movsb
4:  mov $0x36d76289, %edi
    mov ${mb2_copy}, %esi
3:
    /* PML4[0] -> PDPT */
    mov $bw_pdpt, %eax
    or $3, %eax
    mov %eax, bw_pml4
    movl $0, bw_pml4 + 4
    /* PDPT[0..4] -> the four page directories */
    xor %ecx, %ecx
5:  mov %ecx, %eax
    shl $12, %eax
    add $bw_pd, %eax
    or $3, %eax
    mov %eax, bw_pdpt(,%ecx,8)
    movl $0, bw_pdpt + 4(,%ecx,8)
    inc %ecx
    cmp $4, %ecx
    jb 5b
    /* PD: 2048 entries of 2 MiB, present | writable | large; the 4th GiB uncached */
    xor %ecx, %ecx
6:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax
    cmp $1536, %ecx
    jb 7f
    or $0x18, %eax
7:  mov %eax, bw_pd(,%ecx,8)
    movl $0, bw_pd + 4(,%ecx,8)
    inc %ecx
    cmp $2048, %ecx
    jb 6b
    /* The 2 MiB holding the stack guard in 4 KiB pages, so the guard can be left
       unmapped: a stack overflow faults instead of overwriting memory. That is the
       first 2 MiB while the image is under 1 MiB, the next once it grows past (edx =
       its base). (Page 0 stays mapped either way: QEMU's PVH start_info lives there.) */
    mov $bw_stack_guard, %edx
    and $0xFFE00000, %edx
    xor %ecx, %ecx
9:  mov %ecx, %eax
    shl $12, %eax
    add %edx, %eax
    or $3, %eax
    mov %eax, bw_pt0(,%ecx,8)
    movl $0, bw_pt0 + 4(,%ecx,8)
    inc %ecx
    cmp $512, %ecx
    jb 9b
    mov $bw_stack_guard, %eax
    shr $12, %eax
    and $511, %eax
    movl $0, bw_pt0(,%eax,8)
    mov $bw_pt0, %eax
    or $3, %eax
    shr $21, %edx
    mov %eax, bw_pd(,%edx,8)

    mov $bw_pml4, %eax
    mov %eax, %cr3
    mov %cr4, %eax
    or $((1 << 5) | (1 << 9) | (1 << 10)), %eax
    mov %eax, %cr4
    mov $0xC0000080, %ecx
    rdmsr
    or $(1 << 8), %eax
    wrmsr
    mov %cr0, %eax
    and $~(1 << 2), %eax
    or $((1 << 31) | (1 << 5) | (1 << 1) | 1), %eax
    mov %eax, %cr0
    lgdt bw_boot_gdt_ptr
    ljmp $0x08, $bw_start64

    .code64
bw_start64:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    xor %ax, %ax
    mov %ax, %fs
    mov %ax, %gs
    mov $bw_boot_stack_top, %rsp
    xor %ebp, %ebp
    mov %edi, %edi
    mov %esi, %esi
    call bw_kernel_main
8:  cli
    hlt
    jmp 8b

    .section .rodata
    .p2align 3
bw_boot_gdt:
    .quad 0
    .quad 0x00AF9A000000FFFF
    .quad 0x00CF92000000FFFF
bw_boot_gdt_ptr:
    .short bw_boot_gdt_ptr - bw_boot_gdt - 1
    .long bw_boot_gdt

    .section .bss.bwboot, "aw", @nobits
    .p2align 12
    .global bw_stack_guard
bw_stack_guard:
    .skip 4096
bw_boot_stack:
    .skip {stack}
    .global bw_boot_stack_top
bw_boot_stack_top:
    .p2align 12
    .global bw_pml4
bw_pml4:
    .skip 4096
bw_pdpt:
    .skip 4096
    .global bw_pd
bw_pd:
    .skip 4096 * 4
bw_pt0:
    .skip 4096
    .text
"#,
    mb2_copy = const MB2_COPY,
    mb2_max = const MB2_COPY_MAX,
    stack = const BOOT_STACK,
    options(att_syntax)
);
