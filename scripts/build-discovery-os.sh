#!/usr/bin/env bash
# Builds Landfall's own discovery OS from Debian (bookworm) packages: a
# bootable live ISO in the Fedora CoreOS live-ISO layout, which Landfall
# serves as the base image of every x86_64 discovery ISO when the release
# catalogue names none (see README, "Discovery OS").
#
#   scripts/build-discovery-os.sh [--force]    prints the output directory on stdout
#
# Output, outside the checkout: ${XDG_CACHE_HOME:-~/.cache}/landfall/discovery-os/<key>/
#   live.iso      isolinux (BIOS) + GRUB (EFI) live ISO, CoreOS layout:
#                   /images/pxeboot/{vmlinuz,initrd.img,rootfs.img}
#                   /images/ignition.img   256 KiB Ignition embed area (zeros), loaded as an extra initrd
#                   /coreos/igninfo.json   {"file": "images/ignition.img"}
#                   /coreos/kargs.json     the kernel-argument areas in isolinux.cfg and grub.cfg
#   vmlinuz, initrd.img, rootfs.img   the same files, for PXE
#   packages.txt  every Debian package used, with its version and the .deb's sha256
#   SHA256SUMS
#
# What goes where, and why:
#   initrd.img (~3 MB)  busybox-static, the kernel modules for virtio/ATA/AHCI/NVMe/USB
#                       storage, CD-ROM and common NICs, discovery-os/init (PID 1) and
#                       the sha256 of the rootfs it belongs to.
#   rootfs.img (~35 MB) gzip'd newc cpio that /init unpacks over / from the ISO
#                       (coreos.liveiso=LABEL) or from coreos.live.rootfs_url (minimal
#                       ISO, iPXE): Debian's nodejs with its shared libraries, lsblk
#                       (util-linux) and ip (iproute2), which the agent's inventory runs,
#                       CA certificates, the Ignition applier, and the agent bundle.
# The agent bundle (dist/agent/landfall-agent.js) is built into rootfs.img rather
# than delivered at boot: a host then runs the agent of the service that built its
# image, the Ignition (256 KiB area) stays small, and a host needs nothing but
# the service's URL. The cache key therefore covers the agent bundle: when the
# agent changes, the next run re-assembles the images (tens of seconds) from the
# Debian packages already downloaded (kept under debs/, keyed by their versions).
#
# Key: DISCOVERY_OS_VERSION (scripts/versions.sh) + sha256 of this script, discovery-os/
# and the agent bundle. Package versions are the newest the configured Debian sources
# offer at build time (recorded in packages.txt); a cached build is reused as it is.
# The output is byte-for-byte reproducible from the same .deb files and inputs
# (sorted cpio entries with fixed times, gzip -n, xorriso with SOURCE_DATE_EPOCH).
# Needs: apt-get, dpkg-deb, node (this project's), xorriso, and for EFI mtools, dosfstools and
# grub-mkimage with grub-efi-amd64-bin's modules, and grub-pc-bin's (BIOS) modules for the
# installed OS's boot loader (installed from Debian when missing and root).
#
# The installed OS: the agent installs this same OS to a host's disk when the service
# asks (agent/executors/landfall-disk.ts; there is no coreos-installer here). The rootfs
# carries what that needs besides the running images, in /usr/lib/landfall/installed-os/:
# GRUB's boot.img and an i386-pc core.img (BIOS; its built-in config reads the boot
# configuration the agent writes at the start of the disk's first partition), a 4 MiB
# FAT EFI system partition image with an x86_64-efi GRUB built with the same config
# (UEFI), and the kernel's sha256; plus the first-boot reporter (discovery-os/first-boot.ts) that the
# installed OS runs instead of the agent (landfall.installed=1, see discovery-os/init).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/versions.sh
log() { echo "discovery-os: $*" >&2; }
die() { log "error: $*"; exit 1; }

FORCE=no
[ "${1:-}" = "--force" ] && FORCE=yes
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/landfall/discovery-os"
AGENT=dist/agent/landfall-agent.js
ESBUILD=node_modules/.bin/esbuild
[ -x "$ESBUILD" ] || die "npm dependencies are missing (run scripts/setup.sh)"
if [ ! -f "$AGENT" ]; then
  log "building the agent bundle"
  "$ESBUILD" agent/main.ts --bundle --platform=node --target=node20 --log-level=warning --outfile="$AGENT"
fi
# Timestamps inside the images (not the build time: reproducible output).
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1735689600}

key_inputs() {
  echo "DISCOVERY_OS_VERSION=$DISCOVERY_OS_VERSION"
  sha256sum scripts/build-discovery-os.sh $(find discovery-os -type f | LC_ALL=C sort) "$AGENT"
}
KEY="$DISCOVERY_OS_VERSION-$(key_inputs | sha256sum | cut -c1-16)"
OUT="$CACHE/$KEY"
if [ "$FORCE" = no ] && [ -f "$OUT/.complete" ]; then
  touch "$OUT/.complete"
  echo "$OUT"
  exit 0
fi
mkdir -p "$CACHE"
# One build at a time per cache (two checkouts starting together).
exec 9>"$CACHE/.lock"
flock 9
if [ "$FORCE" = no ] && [ -f "$OUT/.complete" ]; then echo "$OUT"; exit 0; fi
started=$(date +%s)

# --- host tools -------------------------------------------------------------
need=()
command -v xorriso >/dev/null 2>&1 || need+=(xorriso)
command -v mcopy >/dev/null 2>&1 || need+=(mtools)
command -v grub-mkimage >/dev/null 2>&1 || need+=(grub-common)
[ -d /usr/lib/grub/x86_64-efi ] || need+=(grub-efi-amd64-bin)
[ -f /usr/lib/grub/i386-pc/boot.img ] || need+=(grub-pc-bin)
command -v mkfs.fat >/dev/null 2>&1 || need+=(dosfstools)
if [ ${#need[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing ${need[*]} (Debian packages); install them and run again"
  log "installing ${need[*]} (Debian)"
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null || die "could not install ${need[*]}"
fi

# --- Debian packages ----------------------------------------------------------
# The newest version of a package the configured Debian sources offer (madison lists
# only downloadable versions: a locally installed build from elsewhere is not chosen).
newest() {
  local best="" v
  for v in $(apt-cache madison "$1" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}'); do
    if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
  done
  echo "$best"
}
if [ -z "$(newest busybox-static)" ]; then
  [ "$(id -u)" = 0 ] || die "apt has no package lists (run apt-get update as root)"
  log "apt-get update"
  apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
fi
kimage_ver=$(newest linux-image-amd64)
[ -n "$kimage_ver" ] || die "no linux-image-amd64 in the apt sources"
KPKG=$(apt-cache show "linux-image-amd64=$kimage_ver" | sed -n 's/^Depends: \([^ ,]*\).*/\1/p' | head -n1)
[ -n "$KPKG" ] || die "cannot tell which kernel linux-image-amd64 $kimage_ver depends on"
# Boot: kernel, busybox, boot loaders. Live rootfs: Debian's nodejs (18) and the
# libraries it and lsblk/ip link against; the shared-builtin JS modules Debian's
# node loads from /usr/share/nodejs (acorn, cjs-module-lexer, undici); CA certificates.
PACKAGES=(
  "$KPKG" busybox-static isolinux syslinux-common
  nodejs libnode108 node-acorn node-cjs-module-lexer node-undici
  libc6 libgcc-s1 libstdc++6 libbrotli1 libc-ares2 libicu72 libnghttp2-14 libssl3 libuv1 zlib1g
  util-linux libblkid1 libmount1 libsmartcols1 libudev1 libselinux1 libpcre2-8-0
  iproute2 libbpf1 libbsd0 libmd0 libcap2 libdb5.3 libelf1 libmnl0 libtirpc3 libxtables12
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1
  ca-certificates
)
specs=()
for p in "${PACKAGES[@]}"; do
  v=$(newest "$p")
  [ -n "$v" ] || die "Debian package $p is not in the apt sources"
  specs+=("$p=$v")
done
DEBS="$CACHE/debs/$(printf '%s\n' "${specs[@]}" | LC_ALL=C sort | sha256sum | cut -c1-16)"
if [ ! -f "$DEBS/.complete" ]; then
  log "downloading ${#specs[@]} Debian packages (kernel $KPKG)"
  rm -rf "$DEBS" && mkdir -p "$DEBS"
  (cd "$DEBS" && apt-get download -q -o APT::Sandbox::User=root "${specs[@]}" >/dev/null) || die "apt-get download failed"
  touch "$DEBS/.complete"
fi

WORK=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
POOL=$WORK/pool
mkdir -p "$POOL"
log "unpacking packages"
for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$POOL"; done
BB=$POOL/bin/busybox
KVER=$(ls "$POOL/lib/modules")
[ -f "$POOL/boot/vmlinuz-$KVER" ] || die "no kernel image in $KPKG"

# The build's own helpers (TypeScript in discovery-os/), bundled for the host's node and the image's node 18.
"$ESBUILD" discovery-os/mkcpio.ts --bundle --platform=node --target=node18 --log-level=warning --outfile="$WORK/mkcpio.js"
"$ESBUILD" discovery-os/ignition-apply.ts --bundle --platform=node --target=node18 --log-level=warning --outfile="$WORK/ignition-apply.js"
"$ESBUILD" discovery-os/first-boot.ts --bundle --platform=node --target=node18 --log-level=warning --outfile="$WORK/first-boot.js"
mkcpio() { node "$WORK/mkcpio.js" "$@"; }

# --- rootfs.img ----------------------------------------------------------------
R=$WORK/rootfs
mkdir -p "$R/lib64" "$R/usr/lib/landfall" "$R/usr/local/bin" "$R/usr/share/nodejs" "$R/etc/ssl/certs" "$R/usr/lib/ssl"
LDSO=$POOL/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
LIBPATH=$POOL/lib/x86_64-linux-gnu:$POOL/usr/lib/x86_64-linux-gnu
add_file() { mkdir -p "$(dirname "$R/$1")"; cp -L "$POOL/$1" "$R/$1"; }
add_binary() {
  add_file "$1"
  local line lib
  # The pool's own loader resolves the libraries within the pool (not the host's).
  while read -r line; do
    case "$line" in
      *"=> not found"*) die "$1 needs ${line%% *}, which no package in the list provides" ;;
      *"=> "*) lib=${line#*=> }; lib=${lib%% (*} ;;
      *) continue ;;
    esac
    case "$lib" in "$POOL"/*) ;; *) die "$1 resolved ${line%% *} outside the package set ($lib)" ;; esac
    [ -e "$R/${lib#"$POOL"/}" ] || add_file "${lib#"$POOL"/}"
  done < <("$LDSO" --inhibit-cache --library-path "$LIBPATH" --list "$POOL/$1")
}
add_file lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$R/lib64/ld-linux-x86-64.so.2"
for b in usr/bin/node bin/lsblk bin/ip; do add_binary "$b"; done
# iproute2's own link, which shadows busybox's ip applet (no -j) in /sbin.
mkdir -p "$R/sbin" && ln -s /bin/ip "$R/sbin/ip"
for m in acorn acorn-walk cjs-module-lexer undici; do cp -a "$POOL/usr/share/nodejs/$m" "$R/usr/share/nodejs/"; done
# Debian's node uses OpenSSL's store: one bundle of Debian's CA certificates where OpenSSL looks.
cat "$POOL"/usr/share/ca-certificates/mozilla/*.crt > "$R/etc/ssl/certs/ca-certificates.crt"
ln -s /etc/ssl/certs "$R/usr/lib/ssl/certs"
ln -s /etc/ssl/certs/ca-certificates.crt "$R/usr/lib/ssl/cert.pem"
cp "$AGENT" "$R/usr/lib/landfall/landfall-agent.js"
cp "$WORK/ignition-apply.js" "$R/usr/lib/landfall/ignition-apply.js"
cp "$WORK/first-boot.js" "$R/usr/lib/landfall/first-boot.js"
# The installed OS's boot loader. core.img goes into the 1 MiB before the disk's first
# partition (GRUB's boot.img in the MBR loads it from LBA 1); its built-in config finds
# the boot configuration by block list on that disk's first partition, where the agent
# wrote it (no file system: kernel, initrd, rootfs and configuration sit at sectors
# that configuration names).
mkdir -p "$R/usr/lib/landfall/installed-os" "$WORK/bios"
cat > "$WORK/bios/embedded.cfg" <<'GRUBCFG'
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
regexp --set=1:lfdisk '^\(?([^,)]+)' "$root"
export lfdisk
echo "landfall: boot disk ($lfdisk), configuration (${lfdisk},msdos1)0+8"
configfile (${lfdisk},msdos1)0+8
echo "landfall: no Landfall boot configuration on (${lfdisk},msdos1)"
GRUBCFG
grub-mkimage -O i386-pc -o "$R/usr/lib/landfall/installed-os/core.img" -c "$WORK/bios/embedded.cfg" -p '(hd0,msdos1)' \
  biosdisk part_msdos linux normal configfile serial terminal echo regexp test
[ "$(stat -c %s "$R/usr/lib/landfall/installed-os/core.img")" -lt $((2047 * 512)) ] || die "GRUB's core.img does not fit before the first partition"
cp /usr/lib/grub/i386-pc/boot.img "$R/usr/lib/landfall/installed-os/boot.img"
sha256sum "$POOL/boot/vmlinuz-$KVER" | cut -d' ' -f1 > "$R/usr/lib/landfall/installed-os/vmlinuz.sha256"
# UEFI: the same built-in config in an x86_64-efi GRUB, as EFI/BOOT/BOOTX64.EFI on a small FAT
# EFI system partition the agent writes as the disk's second partition (the first stays BIOS's).
mkdir -p "$WORK/esp/EFI/BOOT"
grub-mkimage -O x86_64-efi -o "$WORK/esp/EFI/BOOT/BOOTX64.EFI" -c "$WORK/bios/embedded.cfg" -p /EFI/BOOT \
  part_msdos linux normal configfile serial terminal echo regexp test all_video
find "$WORK/esp" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
truncate -s 4M "$WORK/esp.img"
mkfs.fat --invariant -n LANDFALLESP -i 4c464553 "$WORK/esp.img" >/dev/null
MTOOLS_SKIP_CHECK=1 mcopy -s -m -i "$WORK/esp.img" "$WORK/esp/EFI" ::/
cp "$WORK/esp.img" "$R/usr/lib/landfall/installed-os/esp.img"
# What the installed OS's /init starts instead of the agent, retried until it has reported.
printf '#!/bin/sh\n# Landfall installed OS: reports the remaining install stages (discovery-os/first-boot.ts).\nuntil /usr/bin/node /usr/lib/landfall/first-boot.js "$@"; do echo "landfall-first-boot: retrying in 10 s"; sleep 10; done\n' > "$R/usr/local/bin/landfall-first-boot"
chmod 755 "$R/usr/local/bin/landfall-first-boot"
# The ExecStart of the unit Landfall's discovery Ignition writes.
printf '#!/bin/sh\nexec /usr/bin/node /usr/lib/landfall/landfall-agent.js "$@"\n' > "$R/usr/local/bin/landfall-agent"
# The agent reboots with `systemctl reboot`; there is no systemd here.
cat > "$R/usr/local/bin/systemctl" <<'EOF'
#!/bin/sh
# Landfall discovery OS: no systemd. Power actions go to busybox; anything else fails.
case "$1" in
  reboot|poweroff|halt) exec "/sbin/$1" ;;
  *) echo "systemctl: this live system has no systemd (busybox init)" >&2; exit 1 ;;
esac
EOF
chmod 755 "$R/usr/local/bin/landfall-agent" "$R/usr/local/bin/systemctl"
log "packing rootfs.img"
mkcpio "$R" | gzip -n -6 > "$WORK/rootfs.img"
ROOTFS_SHA=$(sha256sum "$WORK/rootfs.img" | cut -d' ' -f1)

# --- initrd.img ----------------------------------------------------------------
I=$WORK/initrd
mkdir -p "$I"/{bin,sbin,usr/bin,usr/sbin,etc/landfall,proc,sys,dev,run,tmp,root,var/log,mnt,usr/lib/landfall,lib/modules}
chmod 1777 "$I/tmp"
cp "$BB" "$I/bin/busybox"
for a in $("$BB" --list-full); do
  [ -e "$I/$a" ] || { mkdir -p "$I/$(dirname "$a")"; ln -s /bin/busybox "$I/$a"; }
done
install -m 755 discovery-os/init "$I/init"
install -m 755 discovery-os/udhcpc.script "$I/usr/lib/landfall/udhcpc.script"
# Kernel modules: disks (virtio, ATA, AHCI, NVMe, SCSI, USB storage), the CD-ROM and
# its filesystem, and NICs common in servers and VMs; with every module they depend on.
WANTED_MODULES=(
  virtio_pci virtio_blk virtio_net virtio_scsi virtio_rng
  ata_piix ata_generic ahci sd_mod sr_mod isofs nvme
  usb_storage uas xhci_pci ehci_pci ohci_pci uhci_hcd
  megaraid_sas mpt3sas vmw_pvscsi
  e1000 e1000e igb igc ixgbe i40e ice bnxt_en tg3 r8169 vmxnet3 mlx5_core
)
MODSRC=$POOL/lib/modules/$KVER
declare -A MODPATH=()
while read -r f; do n=${f##*/}; n=${n%.ko}; MODPATH[${n//-/_}]=$f; done < <(find "$MODSRC/kernel" -name '*.ko')
declare -A TAKEN=()
queue=("${WANTED_MODULES[@]}")
while [ ${#queue[@]} -gt 0 ]; do
  m=${queue[0]//-/_}; queue=("${queue[@]:1}")
  [ -n "${TAKEN[$m]:-}" ] && continue
  f=${MODPATH[$m]:-}
  if [ -z "$f" ]; then
    grep -q "/${m}.ko\$\|/${m//_/-}.ko\$" "$MODSRC/modules.builtin" || die "kernel module $m is neither in $KPKG nor built in"
    continue
  fi
  TAKEN[$m]=1
  mkdir -p "$I/lib/modules/$KVER/$(dirname "${f#"$MODSRC"/}")"
  cp "$f" "$I/lib/modules/$KVER/${f#"$MODSRC"/}"
  # Dependencies from the module's .modinfo section (depends=a,b).
  deps=$(tr '\0' '\n' < "$f" | sed -n 's/^depends=//p' | head -n1)
  for d in ${deps//,/ }; do queue+=("$d"); done
done
cp "$MODSRC/modules.order" "$MODSRC/modules.builtin" "$I/lib/modules/$KVER/"
[ -f "$MODSRC/modules.builtin.modinfo" ] && cp "$MODSRC/modules.builtin.modinfo" "$I/lib/modules/$KVER/"
"$BB" depmod -b "$I" "$KVER"
# Minimal /etc; the rootfs adds the rest.
echo 'root:x:0:0:root:/root:/bin/sh' > "$I/etc/passwd"
echo 'root:x:0:' > "$I/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$I/etc/hosts"
echo 'hosts: files dns' > "$I/etc/nsswitch.conf"
: > "$I/etc/resolv.conf"
OS_VERSION="$KEY (Debian bookworm, kernel $KVER)"
printf 'NAME="Landfall discovery OS"\nID=landfall-discovery\nID_LIKE=debian\nVERSION_ID=%s\nPRETTY_NAME="Landfall discovery OS %s"\n' "$KEY" "$KEY" > "$I/etc/os-release"
echo "$OS_VERSION" > "$I/etc/landfall/os-version"
echo "$ROOTFS_SHA" > "$I/etc/landfall/rootfs.sha256"
log "packing initrd.img ($(echo "${!TAKEN[@]}" | wc -w) kernel modules)"
mkcpio "$I" --dev dev/console:c:5:1:600 --dev dev/null:c:1:3:666 | gzip -n -9 > "$WORK/initrd.img"

# --- live.iso ----------------------------------------------------------------
LABEL="landfall-dos-$DISCOVERY_OS_VERSION"
KARGS="coreos.liveiso=$LABEL ignition.firstboot ignition.platform.id=metal console=tty0 console=ttyS0,115200n8"
KARGS_SIZE=1024
S=$WORK/iso
mkdir -p "$S/isolinux" "$S/images/pxeboot" "$S/coreos" "$S/EFI/BOOT"
cp "$POOL/boot/vmlinuz-$KVER" "$S/images/pxeboot/vmlinuz"
cp "$WORK/initrd.img" "$WORK/rootfs.img" "$S/images/pxeboot/"
head -c 262144 /dev/zero > "$S/images/ignition.img"
cp "$POOL/usr/lib/ISOLINUX/isolinux.bin" "$POOL/usr/lib/syslinux/modules/bios/ldlinux.c32" "$S/isolinux/"
# A boot config: PREFIX, then the kernel-argument area (KARGS, newline, '#' to
# KARGS_SIZE bytes: a comment line to both boot loaders), then SUFFIX. Prints the area's offset.
write_boot_config() {
  local file=$1 prefix=$2 suffix=$3 area
  area=$(printf '%s\n' "$KARGS"; head -c $((KARGS_SIZE - ${#KARGS} - 1)) /dev/zero | tr '\0' '#')
  printf '%s%s%s' "$prefix" "$area" "$suffix" > "$file"
  printf '%s' "$prefix" | wc -c
}
ISOLINUX_OFF=$(write_boot_config "$S/isolinux/isolinux.cfg" "serial 0 115200
default landfall
prompt 0
timeout 0
label landfall
  kernel /images/pxeboot/vmlinuz
  append initrd=/images/pxeboot/initrd.img,/images/ignition.img " "
")
GRUB_OFF=$(write_boot_config "$S/EFI/BOOT/grub.cfg" "serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=1
search --no-floppy --set=root --label $LABEL
menuentry 'Landfall discovery OS' {
  linux /images/pxeboot/vmlinuz " "
  initrd /images/pxeboot/initrd.img /images/ignition.img
}
")
printf '{"file": "images/ignition.img"}\n' > "$S/coreos/igninfo.json"
printf '{"default": "%s", "files": [{"path": "EFI/BOOT/grub.cfg", "offset": %d}, {"path": "isolinux/isolinux.cfg", "offset": %d}], "size": %d}\n' \
  "$KARGS" "$GRUB_OFF" "$ISOLINUX_OFF" "$KARGS_SIZE" > "$S/coreos/kargs.json"
# EFI: a GRUB core image with its modules built in (grub-mkimage: no memdisk, so the
# same inputs give the same bytes) whose built-in config reads the ISO's
# EFI/BOOT/grub.cfg (the file kargs.json patches), in a small FAT image the firmware boots.
mkdir -p "$WORK/efi"
printf 'search --no-floppy --set=root --file /coreos/kargs.json\nset prefix=($root)/EFI/BOOT\nconfigfile ($root)/EFI/BOOT/grub.cfg\n' > "$WORK/efi/embedded.cfg"
grub-mkimage -O x86_64-efi -o "$WORK/efi/BOOTX64.EFI" -c "$WORK/efi/embedded.cfg" -p /EFI/BOOT \
  part_gpt part_msdos iso9660 search search_label search_fs_file linux normal configfile serial terminal echo gzio all_video
mkdir -p "$WORK/efi/tree/EFI/BOOT"
cp "$WORK/efi/BOOTX64.EFI" "$WORK/efi/tree/EFI/BOOT/BOOTX64.EFI"
find "$WORK/efi/tree" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
truncate -s 2M "$S/images/efiboot.img"
# --invariant: fixed times in the label entry; mcopy -m keeps the files' (fixed) times.
mkfs.fat --invariant -n LANDFALLEFI -i 4c414e44 "$S/images/efiboot.img" >/dev/null
MTOOLS_SKIP_CHECK=1 mcopy -s -m -i "$S/images/efiboot.img" "$WORK/efi/tree/EFI" ::/
cp "$WORK/efi/BOOTX64.EFI" "$S/EFI/BOOT/BOOTX64.EFI"
# Every file's time is SOURCE_DATE_EPOCH (xorriso takes the volume's dates from it too).
find "$S" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
log "writing live.iso"
xorriso -as mkisofs -quiet -o "$WORK/live.iso" -V "$LABEL" -R \
  -b isolinux/isolinux.bin -c isolinux/boot.cat -no-emul-boot -boot-load-size 4 -boot-info-table \
  -isohybrid-mbr "$POOL/usr/lib/ISOLINUX/isohdpfx.bin" \
  -eltorito-alt-boot -e images/efiboot.img -no-emul-boot -isohybrid-gpt-basdat \
  "$S" 2>&1 | grep -v 'UPDATE\|^$\|^xorriso 1\.\|SOURCE_DATE_EPOCH encountered' >&2 || true
[ -s "$WORK/live.iso" ] || die "xorriso wrote no ISO"

# --- output ------------------------------------------------------------------
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
mv "$WORK/live.iso" "$WORK/rootfs.img" "$WORK/initrd.img" "$OUT.tmp/"
cp "$POOL/boot/vmlinuz-$KVER" "$OUT.tmp/vmlinuz"
for d in "$DEBS"/*.deb; do
  dpkg-deb -f "$d" Package Version | paste -sd= | tr -d '\n'
  echo " $(sha256sum "$d" | cut -d' ' -f1)"
done | sed 's/^Package: //; s/=Version: /=/' > "$OUT.tmp/packages.txt"
(cd "$OUT.tmp" && sha256sum live.iso vmlinuz initrd.img rootfs.img > SHA256SUMS)
printf '{"key": "%s", "kernel": "%s", "label": "%s", "kargs": "%s", "built_seconds": %d}\n' "$KEY" "$KVER" "$LABEL" "$KARGS" $(( $(date +%s) - started )) > "$OUT.tmp/build-info.json"
touch "$OUT.tmp/.complete"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
# Keep the four most recently used builds (each ~90 MB).
ls -1dt "$CACHE"/*/.complete 2>/dev/null | tail -n +5 | while read -r old; do rm -rf "$(dirname "$old")"; done
log "built $OUT in $(( $(date +%s) - started )) s: live.iso $(( $(stat -c %s "$OUT/live.iso") / 1048576 )) MiB, rootfs.img $(( $(stat -c %s "$OUT/rootfs.img") / 1048576 )) MiB, initrd.img $(( $(stat -c %s "$OUT/initrd.img") / 1024 )) KiB"
echo "$OUT"
