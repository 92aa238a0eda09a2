//! Streams, events and the cudarc interop on the GPU: events time and order work across streams, cudarc slices pass through gpu-async launches
//! without copies, and buffers start on 4 KiB boundaries whatever cudarc allocates around them.

#[allow(dead_code)]
#[path = "common/host_kernels.rs"]
mod host_kernels;

#[path = "common/devices.rs"]
mod devices;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use gpu_async::cudarc::driver::{CudaContext, CudaSlice};
use gpu_async::{block_on, Device, DeviceBuffer, Error, Result};
use gpu_async_testing::needs_gpu;
use host_kernels::{address_of, affine, spin_write};

/// The tests of this file run one at a time: the overlap test times two launches, and another
/// test's allocation or free in parallel (`cuMemFree` synchronizes the device) would serialize
/// them and make the timeline measure the other test instead.
static ALONE: Mutex<()> = Mutex::new(());

/// The GPU, created once this test's turn has come.
fn gpu() -> (Device, MutexGuard<'static, ()>) {
    let alone = ALONE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (devices::gpu(), alone)
}

fn cudarc_error(e: gpu_async::cudarc::driver::DriverError) -> Error {
    Error::Buffer(format!("cudarc: {e:?}"))
}

#[needs_gpu]
fn events_time_and_order_work_across_streams() -> Result<()> {
    let (device, _alone) = gpu();
    let (a, b) = (device.new_stream()?, device.new_stream()?);
    assert!(!a.is_default() && device.default_stream().is_default());
    assert_eq!(a.device().name(), device.name());
    let mut out = device.alloc::<u32>(1 << 16)?;
    let start = a.record_event()?;
    let launch = spin_write(&a, 8, &mut out, 30_000_000, 4);
    let end = a.record_event()?;
    // Stream b's later work waits for a's launch, without the host waiting.
    b.wait_event(&end)?;
    let after = b.record_event()?;
    let t0 = Instant::now();
    after.synchronize()?;
    let waited = t0.elapsed();
    let ms = start.elapsed_ms(&end)?;
    eprintln!("30 ms spin: {ms:.3} ms between events; b's event completed after {waited:?}");
    assert!((25.0..200.0).contains(&ms), "{ms}");
    assert!(launch.is_complete());
    block_on(launch)?;
    assert!(end.elapsed_ms(&after)? >= 0.0);
    b.synchronize()?;
    assert!(out.download()?.iter().all(|&v| v == 4));
    // A simulator event is always complete; events of two devices cannot be compared.
    let sim_event = Device::simulator().default_stream().record_event()?;
    a.wait_event(&sim_event)?;
    assert!(matches!(
        start.elapsed_ms(&sim_event),
        Err(Error::InvalidArgument(_))
    ));
    Device::simulator().default_stream().wait_event(&end)?;
    Ok(())
}

#[needs_gpu]
fn a_buffer_used_on_two_streams_is_ordered() -> Result<()> {
    let (device, _alone) = gpu();
    let (a, b) = (device.new_stream()?, device.new_stream()?);
    let n = 1 << 20;
    let xs: Vec<u32> = (0..n as u32).collect();
    let x = device.upload(&xs)?;
    let mut y = device.alloc::<u32>(n)?;
    let mut z = device.alloc::<u32>(n)?;
    // y written on a (after a long spin on a), then read on b: b waits for a's write.
    let mut slow = device.alloc::<u32>(1 << 16)?;
    let spin = spin_write(&a, 8, &mut slow, 20_000_000, 1);
    std::mem::forget(affine(&a, &x, &mut y));
    block_on(affine(&b, &y, &mut z))?;
    assert!(spin.is_complete());
    drop(spin);
    let want: Vec<u32> = xs.iter().map(|x| 2 * (2 * x + 1) + 1).collect();
    assert!(z.download()? == want);
    Ok(())
}

#[needs_gpu]
fn cudarc_slices_pass_through_launches() -> Result<()> {
    let (_device, _alone) = gpu();
    let ctx = CudaContext::new(0).map_err(cudarc_error)?;
    let cstream = ctx.new_stream().map_err(cudarc_error)?;
    let device = Device::from_cudarc(Arc::clone(&cstream))?;
    let own = device
        .cudarc_stream()
        .ok_or_else(|| Error::Buffer("no cudarc stream".to_string()))?;
    assert!(Arc::ptr_eq(&own, &cstream));
    eprintln!("from_cudarc: {device}");

    // Allocated and filled by cudarc, used by a gpu-async launch, read back by cudarc.
    let n = 100_000;
    let xs: Vec<u32> = (0..n as u32).map(|i| i * 3).collect();
    let x_slice = cstream.clone_htod(&xs).map_err(cudarc_error)?;
    let y_slice = cstream.alloc_zeros::<u32>(n).map_err(cudarc_error)?;
    let x = DeviceBuffer::from_cudarc(&device, x_slice)?;
    let mut y = DeviceBuffer::from_cudarc(&device, y_slice)?;
    assert_eq!(x.len(), n);
    block_on(affine(&device.default_stream(), &x, &mut y))?;
    // And on another stream of the device.
    let other = device.new_stream()?;
    let mut y2 = device.alloc::<u32>(n)?;
    block_on(affine(&other, &y, &mut y2))?;
    let y_slice: CudaSlice<u32> = y.into_cudarc()?;
    let ys = cstream.clone_dtoh(&y_slice).map_err(cudarc_error)?;
    assert!(ys.iter().zip(&xs).all(|(y, x)| *y == 2 * x + 1));
    // A buffer gpu-async allocated, handed to cudarc.
    let y2_slice = y2.into_cudarc()?;
    let y2s = y2_slice
        .stream()
        .clone_dtoh(&y2_slice)
        .map_err(cudarc_error)?;
    assert!(y2s.iter().zip(&ys).all(|(z, y)| *z == 2 * y + 1));
    drop(x);

    // A slice of another handle of the same primary context is accepted; one of another
    // context is rejected.
    let plain = Device::cuda(0)?;
    let same_ctx = cstream.clone_htod(&[1u32, 2]).map_err(cudarc_error)?;
    let b = DeviceBuffer::from_cudarc(&plain, same_ctx)?;
    assert_eq!(b.download()?, [1, 2]);
    let foreign_ctx = CudaContext::new_non_primary(0, 0).map_err(cudarc_error)?;
    let foreign = foreign_ctx
        .default_stream()
        .clone_htod(&[1u32])
        .map_err(cudarc_error)?;
    assert!(matches!(
        DeviceBuffer::from_cudarc(&device, foreign),
        Err(Error::Buffer(_))
    ));
    // The simulator has no cudarc side.
    let sim = Device::simulator();
    assert!(sim.cudarc_stream().is_none());
    let on_gpu = cstream.clone_htod(&[1u32]).map_err(cudarc_error)?;
    assert!(matches!(
        DeviceBuffer::from_cudarc(&sim, on_gpu),
        Err(Error::Buffer(_))
    ));
    assert!(matches!(
        sim.upload(&[1u32])?.into_cudarc(),
        Err(Error::Buffer(_))
    ));
    // Empty slices both ways, where the driver makes empty allocations.
    match cstream.null::<u32>() {
        Ok(null) => {
            let empty = DeviceBuffer::from_cudarc(&device, null)?;
            assert!(empty.is_empty());
            assert_eq!(empty.into_cudarc()?.len(), 0);
        }
        Err(e) => eprintln!("no empty cudarc slices here: {e:?}"),
    }
    match device.alloc::<f32>(0)?.into_cudarc() {
        Ok(slice) => assert_eq!(slice.len(), 0),
        Err(e) => eprintln!("an empty buffer cannot become a cudarc slice here: {e}"),
    }
    device.synchronize()?;
    std::thread::sleep(Duration::from_millis(1));
    Ok(())
}

/// Two independent launches on two streams run at the same time: a timeline from events.
#[needs_gpu]
fn independent_launches_on_two_streams_overlap() -> Result<()> {
    let (device, _alone) = gpu();
    let (a, b) = (device.new_stream()?, device.new_stream()?);
    let (mut out_a, mut out_b) = (device.alloc::<u32>(1 << 16)?, device.alloc::<u32>(1 << 16)?);
    // Warm both paths (module load) first.
    block_on(spin_write(&a, 1, &mut out_a, 1_000, 0))?;
    block_on(spin_write(&b, 1, &mut out_b, 1_000, 0))?;
    let spin_ns = 30_000_000;
    let start_a = a.record_event()?;
    let start_b = b.record_event()?;
    let launch_a = spin_write(&a, 4, &mut out_a, spin_ns, 1);
    let launch_b = spin_write(&b, 4, &mut out_b, spin_ns, 2);
    let end_a = a.record_event()?;
    let end_b = b.record_event()?;
    block_on(launch_a)?;
    block_on(launch_b)?;
    end_a.synchronize()?;
    end_b.synchronize()?;
    // Offsets from the first event, in ms: each launch spins 30 ms.
    let t = |e: &gpu_async::Event| start_a.elapsed_ms(e);
    let (a0, a1, b0, b1) = (0.0, t(&end_a)?, t(&start_b)?, t(&end_b)?);
    eprintln!("timeline (ms): stream a [{a0:.2}, {a1:.2}], stream b [{b0:.2}, {b1:.2}]");
    assert!(b0 < a1 && a0 < b1, "the two launches did not overlap");
    let span = a1.max(b1) - a0.min(b0);
    assert!(
        span < 45.0,
        "two 30 ms launches took {span:.2} ms together: they ran one after the other"
    );
    assert!(out_a.download()?.iter().all(|&v| v == 1));
    assert!(out_b.download()?.iter().all(|&v| v == 2));
    Ok(())
}

/// A launch's completion mark is recorded when it is first asked about (docs of `Launch`): a
/// launch marked right after it is submitted resolves when its own kernel ends, while one first
/// asked about after a long launch was queued behind it resolves when that one ends too. Many
/// launches enqueued and only the last awaited all count as finished once it has.
#[needs_gpu]
fn completion_marks_are_recorded_when_first_asked_for() -> Result<()> {
    let (device, _alone) = gpu();
    let stream = device.new_stream()?;
    let mut short_out = device.alloc::<u32>(1 << 10)?;
    let mut long_out = device.alloc::<u32>(1 << 10)?;
    const LONG_NS: usize = 300_000_000;
    for pinned in [true, false] {
        let start = Instant::now();
        let short = spin_write(&stream, 1, &mut short_out, 1_000, 1);
        if pinned {
            short.mark_completion();
        }
        let long = spin_write(&stream, 1, &mut long_out, LONG_NS, 2);
        short.wait()?;
        let short_done = start.elapsed();
        long.wait()?;
        let long_done = start.elapsed();
        eprintln!("pinned {pinned}: short resolved after {short_done:?}, long after {long_done:?}");
        if pinned {
            assert!(short_done < Duration::from_millis(150), "{short_done:?}");
        } else {
            assert!(short_done >= Duration::from_millis(250), "{short_done:?}");
        }
        assert!(long_done >= Duration::from_millis(250), "{long_done:?}");
    }
    // Enqueue all, await the last: the others are then known finished without asking the driver.
    let mut outs: Vec<DeviceBuffer<u32>> = (0..64)
        .map(|_| device.alloc::<u32>(32))
        .collect::<Result<_>>()?;
    let mut launches: Vec<_> = outs
        .iter_mut()
        .enumerate()
        .map(|(i, out)| spin_write(&stream, 1, out, 1_000, i as u32))
        .collect();
    let last = launches.pop().expect("64 launches");
    block_on(last)?;
    assert!(launches.iter().all(|l| l.is_complete()));
    for launch in launches {
        launch.wait()?;
    }
    for (i, out) in outs.iter().enumerate() {
        assert!(out.download()?.iter().all(|&v| v == i as u32));
    }
    Ok(())
}

/// Buffers start on 4 KiB boundaries (bulk copies from buffers 512 bytes past one measured up to
/// 0.8% slower), after small buffers of their own and after small cudarc allocations from the
/// same pool, which leave the pool's next address unaligned; and such a buffer still hands its
/// contents to cudarc.
#[needs_gpu]
fn buffers_start_on_4_kib_boundaries() -> Result<()> {
    let (device, _alone) = gpu();
    let stream = device.default_stream();
    let cstream = device
        .cudarc_stream()
        .ok_or_else(|| Error::Buffer("no cudarc stream".to_string()))?;
    let mut out = device.alloc::<u64>(1)?;
    let mut crumbs = Vec::new();
    let mut kept = Vec::new();
    for (round, len) in [1usize, 3, 4096, 5000, 1 << 20, 7].into_iter().enumerate() {
        let small = device.upload(&[round as u8])?;
        // Bytes the buffer is checked against after the trip through cudarc.
        let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
        let x = device.upload(&bytes)?;
        for (what, buffer) in [("small", &small), ("x", &x)] {
            block_on(address_of(&stream, buffer, &mut out))?;
            let address = out.download()?[0];
            eprintln!(
                "round {round}: {what} ({} bytes) at {address:#x}",
                buffer.len()
            );
            assert_eq!(address % 4096, 0, "round {round}: {what} at {address:#x}");
        }
        // Handed to cudarc: the same bytes, without a copy or (when the driver placed it past
        // its allocation's start) as one.
        let slice = x.into_cudarc()?;
        assert_eq!(cstream.clone_dtoh(&slice).map_err(cudarc_error)?, bytes);
        kept.push((small, slice));
        // A crumb of the same pool, around this crate: 1 byte, which the driver pads to 512.
        crumbs.push(cstream.alloc_zeros::<u8>(1).map_err(cudarc_error)?);
    }
    Ok(())
}
