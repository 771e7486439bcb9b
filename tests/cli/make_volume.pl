#!/usr/bin/perl
# Writes a small float32 NIfTI-1 test volume (1 mm voxels, identity sform) of smooth blobs plus noise, so that a
# model's labels vary across the volume: make_volume.pl FILE NX NY NZ [CHANNELS [SEED]] (uncompressed .nii).
use strict;
use warnings;
my ($file, $nx, $ny, $nz, $channels, $seed) = @ARGV;
die "usage: make_volume.pl FILE NX NY NZ [CHANNELS [SEED]]\n" unless defined $nz;
$channels //= 1;
srand($seed // 1);
my ($ndim, $nt) = $channels > 1 ? (4, $channels) : (3, 1);
my $header = pack("l< a10 a18 l< s< a a s<8 f<3 s<4 f<8 f<3 s< a a f<4 l<2 a80 a24 s<2 f<6 f<12 a16 a4 x4",
  348, "", "", 0, 0, "r", "", $ndim, $nx, $ny, $nz, $nt, 1, 1, 1, 0, 0, 0, 0, 16, 32, 0, 1, 1, 1, 1, 1, 1, 1, 1,
  352, 0, 0, 0, "", "", 0, 0, 0, 0, 0, 0, "", "", 0, 1, 0, 0, 0, 0, 0, 0,
  1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, "", "n+1");
my @centres = map { [rand($nx), rand($ny), rand($nz), 3 + rand(6)] } 1 .. 4;
my @voxels;
for my $c (1 .. $nt) {
  for my $z (0 .. $nz - 1) {
    for my $y (0 .. $ny - 1) {
      for my $x (0 .. $nx - 1) {
        my $v = rand(0.4) - 0.2;
        for my $b (@centres) {
          my $d2 = ($x - $b->[0]) ** 2 + ($y - $b->[1]) ** 2 + ($z - $b->[2]) ** 2;
          $v += 2 * exp(-$d2 / (2 * $b->[3] ** 2));
        }
        push @voxels, $v;
      }
    }
  }
}
open(my $out, ">", $file) or die "$file: $!";
binmode $out;
print $out $header, pack("f<*", @voxels);
close($out) or die "$file: $!";
