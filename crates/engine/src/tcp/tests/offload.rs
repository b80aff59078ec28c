//! Segmentation offload in `next_segment`: with `frame_max` above the MSS one frame carries
//! several segments, whole ones only unless it ends the queued stream (then with the FIN
//! if closed); with `frame_max` at or below the MSS every frame is one segment. The
//! windows and silly-window avoidance apply to frames as to segments. When more is queued
//! than the windows let go, a frame carries at most a quarter of the window (at least two
//! segments), so that the loss of one frame leaves others to draw duplicate ACKs.

use super::*;

const TSO: u32 = 65_535;

#[test]
fn a_response_that_fits_the_initial_window_goes_in_one_frame() {
    let mut c = established();
    c.queue(14_600);
    let segs = send_all_max(&mut c, 0, TSO);
    assert_eq!(segs, [out(LOCAL_SEQ, 14_600, false)]);
}

#[test]
fn a_window_limited_stream_goes_in_frames_of_a_quarter_window() {
    let mut c = established();
    set_cwnd(&mut c, 3 * 1460);
    c.queue(10_000);
    // A quarter of a 4380-byte window is below two segments: frames of two.
    let segs = send_all_max(&mut c, 0, TSO);
    assert_eq!(
        segs,
        [
            out(LOCAL_SEQ, 2920, false),
            out(LOCAL_SEQ + 2920, 1460, false)
        ]
    );
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 4380);
    let mut c = established();
    set_cwnd(&mut c, 1_000_000);
    c.queue(200_000);
    // Window 65535: a quarter is 16383, eleven segments; four such frames leave 1295,
    // a silly segment.
    let segs = send_all_max(&mut c, 0, TSO);
    assert_eq!(segs.len(), 4);
    assert!(segs.iter().all(|s| s.len == 11 * 1460), "{segs:?}");
}

#[test]
fn a_frame_that_ends_the_stream_may_end_in_a_partial_segment() {
    let mut c = established();
    set_cwnd(&mut c, 100_000);
    c.queue(50_000);
    assert_eq!(
        send_all_max(&mut c, 0, TSO),
        [out(LOCAL_SEQ, 50_000, false)]
    );
}

#[test]
fn a_frame_that_does_not_end_the_stream_carries_whole_segments() {
    let mut c = established_with(&SYN_TEMPL, 10_000);
    set_cwnd(&mut c, 100_000);
    c.queue(100_000);
    // 10 000 of window: six whole segments (8760) in frames of two (a quarter window is
    // less), the 1240 left are a silly segment.
    assert_eq!(
        send_all_max(&mut c, 0, TSO),
        [
            out(LOCAL_SEQ, 2920, false),
            out(LOCAL_SEQ + 2920, 2920, false),
            out(LOCAL_SEQ + 5840, 2920, false)
        ]
    );
}

#[test]
fn a_frame_is_at_most_frame_max_rounded_down_to_segments() {
    let mut c = established();
    set_cwnd(&mut c, 1_000_000);
    c.queue(65_000);
    let s = c.next_segment(0, TSO).unwrap();
    assert_eq!(s.len, 44 * 1460, "64240: the window (65535) allows more");
    let mut c = established();
    set_cwnd(&mut c, 1_000_000);
    c.queue(200_000);
    assert_eq!(c.next_segment(0, 4379).unwrap().len, 2920);
    assert_eq!(c.next_segment(0, 4380).unwrap().len, 4380);
}

#[test]
fn the_fin_rides_an_offloaded_frame() {
    let mut c = established();
    set_cwnd(&mut c, 10_000);
    c.queue(5000);
    c.close();
    assert_eq!(send_all_max(&mut c, 0, TSO), [out(LOCAL_SEQ, 5000, true)]);
    assert_eq!(c.state(), State::FinWait1);
    assert_eq!(c.snd_nxt(), LOCAL_SEQ + 5001);
}

#[test]
fn frame_max_up_to_the_mss_means_single_segments() {
    for frame_max in [0, 1, 1000, 1460, 1461, 2919] {
        let mut c = established();
        c.queue(20_000);
        let segs = send_all_max(&mut c, 0, frame_max);
        assert_eq!(segs.len(), 10, "frame_max {frame_max}");
        assert!(segs.iter().all(|s| s.len == 1460), "frame_max {frame_max}");
    }
}

#[test]
fn offload_keeps_silly_window_avoidance() {
    let mut c = established_with(&SYN_TEMPL, 5000);
    c.queue(20_000);
    assert_eq!(
        send_all_max(&mut c, 0, TSO),
        [
            out(LOCAL_SEQ, 2920, false),
            out(LOCAL_SEQ + 2920, 1460, false)
        ]
    );
    // 620 of window left: held while 4380 are in flight.
    assert_eq!(c.next_segment(0, TSO), None);
}

#[test]
fn offload_with_a_small_mss() {
    let syn = ParsedRepr {
        options: NO_OPTIONS,
        ..SYN_TEMPL
    };
    let mut c = established_with(&syn, 65_535);
    set_cwnd(&mut c, 1_000_000);
    c.queue(65_500);
    assert_eq!(c.next_segment(0, TSO).unwrap().len, 122 * 536);
}
