import { either as E } from 'fp-ts';
import { parseQuantity, Quantity, quantityEquals } from '../../src/core/quantity';

const value = (text: string) => parseQuantity(text)?.value;

describe('parseQuantity', () => {
  it.each([
    ['100Mi', `${100 * 2 ** 20}/1`],
    ['1Gi', `${2 ** 30}/1`],
    ['1024Mi', `${2 ** 30}/1`],
    ['1G', '1000000000/1'],
    ['1000M', '1000000000/1'],
    ['0.5', '1/2'],
    ['.5', '1/2'],
    ['500m', '1/2'],
    ['1e3', '1000/1'],
    ['1E3', '1000/1'],
    ['2k', '2000/1'],
    ['0', '0/1'],
    ['0Mi', '0/1'],
    ['-1', '-1/1'],
    ['+1.50Ki', '1536/1'],
    ['1.5Gi', `${1.5 * 2 ** 30}/1`],
  ])('reads %s as the exact amount %s', (text, expected) => {
    expect(value(text)).toBe(expected);
  });

  it.each(['', 'lots', '1GB', '1 Gi', 'Gi', '1.2.3', '1ki', '1e', '--1', '1e99999'])('refuses %j', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });

  it('refuses a quantity of more than 1000 characters before reading its digits (millions took seconds of CPU)', () => {
    expect(value(`${'1'.repeat(1000)}`)).toBe(`${'1'.repeat(1000)}/1`);
    expect(parseQuantity('1'.repeat(1001))).toBeUndefined();
    expect(parseQuantity(`0.${'3'.repeat(4_000_000)}`)).toBeUndefined();
  });

  it('compares semantically: 1Gi equals 1024Mi, 1G does not equal 1Gi', () => {
    expect(quantityEquals(parseQuantity('1Gi')!, parseQuantity('1024Mi')!)).toBe(true);
    expect(quantityEquals(parseQuantity('1G')!, parseQuantity('1000M')!)).toBe(true);
    expect(quantityEquals(parseQuantity('1G')!, parseQuantity('1Gi')!)).toBe(false);
  });
});

describe('Quantity', () => {
  it('decodes strings and JSON numbers and encodes back to the text as written', () => {
    const fromNumber = Quantity.decode(0.5);
    expect(E.isRight(fromNumber) && fromNumber.right.value).toBe('1/2');
    const fromText = Quantity.decode('1024Mi');
    expect(E.isRight(fromText) && Quantity.encode(fromText.right)).toBe('1024Mi');
  });

  it('says what a quantity looks like when given something else', () => {
    const result = Quantity.decode('lots');
    expect(E.isLeft(result) && result.left[0]?.message).toContain('"100Mi"');
    expect(E.isLeft(Quantity.decode(true))).toBe(true);
    expect(E.isLeft(Quantity.decode(Number.NaN))).toBe(true);
  });

  it.each([' 1Gi', '1Gi ', '\u00a01Gi\u3000'])(
    'reads %j as 1Gi: KServe (its Quantity.UnmarshalJSON) trims the spaces around a quantity',
    (text) => {
      const result = Quantity.decode(text);
      expect(E.isRight(result) && result.right).toEqual({ text: '1Gi', value: `${2 ** 30}/1` });
    },
  );

  it('keeps refusing a space inside a quantity, and a byte-order mark, as KServe does', () => {
    expect(E.isLeft(Quantity.decode('1 Gi'))).toBe(true);
    expect(E.isLeft(Quantity.decode('\ufeff1Gi'))).toBe(true);
    expect(E.isLeft(Quantity.decode(`${' '.repeat(1_000_000)}x`))).toBe(true);
  });

  it('says that a quantity is too long, without quoting all of it', () => {
    const result = Quantity.decode('9'.repeat(1_000_000));
    const message = E.isLeft(result) ? (result.left[0]?.message ?? '') : '';
    expect(message).toContain('at most 1000 characters');
    expect(message.length).toBeLessThan(200);
  });
});
