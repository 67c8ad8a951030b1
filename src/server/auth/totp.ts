import { generateSecret, generateURI, verify } from "otplib";

/**
 * TOTP (RFC 6238, 30 s steps, 6 digits) with otplib. A code is accepted in the
 * step before, at and after the current one (clock drift), and only once: the
 * caller stores the accepted step and passes it back as `lastStep`.
 */
export const TOTP_ISSUER = "Charges";

export const newTotpSecret = () => generateSecret();

export const totpUri = (email: string, secret: string) => generateURI({ issuer: TOTP_ISSUER, label: email, secret });

/** The code's time step when it is valid and newer than `lastStep`, else null. */
export async function acceptTotp(secret: string, code: string, lastStep: bigint | null): Promise<number | null> {
  if (!/^\d{6}$/.test(code)) return null;
  try {
    const result = await verify({
      secret,
      token: code,
      epochTolerance: 30,
      ...(lastStep !== null ? { afterTimeStep: Number(lastStep) } : {}),
    });
    return result.valid && "timeStep" in result ? result.timeStep : null;
  } catch {
    // otplib throws for an afterTimeStep beyond the window, i.e. a code from the future already used.
    return null;
  }
}
